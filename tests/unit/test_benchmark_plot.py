import sys

from benchmarks import run


def test_a_run_without_matplotlib_says_why_it_wrote_no_plot(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    line = run.plotted([], str(tmp_path / "run.csv"))
    assert line == '; no plot: matplotlib is not installed (pip install -e ".[bench]")'
    assert not list(tmp_path.iterdir())
