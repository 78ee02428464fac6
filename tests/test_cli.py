"""The gsl-eq command."""

from gsl_eq.cli import main


def test_demo_checks_every_default_model(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for name in ("transformer-encoder", "inception-block", "resnet-bottleneck"):
        assert name in out
    assert out.count("equal") == 3
