"""The analyses the static rules share, by concern: :mod:`.scopes` (node kinds, scopes, paths
through ``if`` statements), :mod:`.expressions` (``TP101``, ``TP102``), :mod:`.loops`
(``TP103``) and :mod:`.data_edits` (``TP104``)."""
