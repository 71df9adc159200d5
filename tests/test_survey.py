"""tools/survey.py: the checker's findings on real code against the committed labels."""

from __future__ import annotations

from tools import survey

CODE = "import torch.nn.functional as F\n\n\ndef forward(x):\n    return F.dropout(x, 0.5)\n"


def corpus(tmp_path):
    folder = tmp_path / "demo"
    (folder / "pkg").mkdir(parents=True)
    (folder / "pkg" / "net.py").write_text(CODE)
    return folder


def labels(tmp_path, label="real", line=5):
    path = tmp_path / "labels.toml"
    path.write_text(
        '[corpora.demo]\nrepo = "someone/demo"\ncommit = "0123abc"\n\n'
        f'[[finding]]\ncorpus = "demo"\npath = "pkg/net.py"\nline = {line}\nrule = "TP102"\n'
        f'label = "{label}"\nwhy = "a forward, evaluated too"\n'
    )
    return path


def test_a_labelled_real_finding_passes(tmp_path, capsys):
    assert survey.main([str(corpus(tmp_path)), "--labels", str(labels(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "| TP102 | on | 1 | 1 | 0 | 0 | 0 | 0.0% |" in out
    assert "1 corpora, 5 lines of Python" in out


def test_a_default_rule_with_false_alarms_fails(tmp_path, capsys):
    folder = corpus(tmp_path)
    assert survey.main([str(folder), "--labels", str(labels(tmp_path, "false"))]) == 1
    assert "over the 5% bound: TP102: 100.0% false alarms, on by default" in capsys.readouterr().out


def test_an_unlabelled_finding_fails_and_is_listed(tmp_path, capsys):
    folder = corpus(tmp_path)
    assert survey.main([str(folder), "--labels", str(labels(tmp_path, line=4))]) == 1
    assert "unlabelled: demo pkg/net.py:5 TP102" in capsys.readouterr().out


def test_bad_input_is_refused_with_what_was_expected(tmp_path, capsys):
    folder = corpus(tmp_path)
    assert survey.main([str(tmp_path / "absent"), "--labels", str(labels(tmp_path))]) == 2
    assert "not folders" in capsys.readouterr().err
    assert survey.main([str(folder), "--labels", str(labels(tmp_path, "maybe"))]) == 2
    assert "is not one of ('real', 'debatable', 'false')" in capsys.readouterr().err
    other = tmp_path / "other"
    other.mkdir()
    assert survey.main([str(other), "--labels", str(labels(tmp_path))]) == 2
    assert "no [corpora] entry for other (known: demo)" in capsys.readouterr().err


def test_the_committed_labels_are_well_formed():
    corpora, entries = survey.read_labels(survey.LABELS)
    assert all({"repo", "commit"} <= set(c) for c in corpora.values())
