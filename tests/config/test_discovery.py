"""Config discovery order (SPEC §2): --config, $ORCA_CONFIG, ./orca.toml, XDG."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orca_cli.config import Config, discover, load
from orca_cli.errors import ConfigError


def _write(path: Path, port: int) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"[server]\nport = {port}\n")
    return str(path)


@pytest.fixture
def four(tmp_path: Path) -> dict[str, str]:
    """One file per discovery place; cwd is tmp_path (conftest)."""
    return {
        "flag": _write(tmp_path / "flag" / "x.toml", 1001),
        "env": _write(tmp_path / "env" / "y.toml", 1002),
        "cwd": _write(tmp_path / "orca.toml", 1003),
        "xdg": _write(tmp_path / "xdg" / "orca" / "orca.toml", 1004),
    }


def test_flag_wins_over_everything(four: dict[str, str], tmp_path: Path) -> None:
    env = {"ORCA_CONFIG": four["env"], "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert discover(four["flag"], env) == four["flag"]
    assert load(four["flag"], environ=env).server.port == 1001


def test_orca_config_env_wins_over_cwd_and_xdg(four: dict[str, str], tmp_path: Path) -> None:
    env = {"ORCA_CONFIG": four["env"], "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert load(None, environ=env).server.port == 1002


def test_cwd_wins_over_xdg(four: dict[str, str], tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert discover(None, env) == "orca.toml"
    cfg = load(None, environ=env)
    assert (cfg.server.port, cfg.source) == (1003, "orca.toml")


def test_xdg_config_home_last(four: dict[str, str], tmp_path: Path) -> None:
    os.remove(four["cwd"])
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert discover(None, env) == four["xdg"]
    assert load(None, environ=env).server.port == 1004


def test_xdg_defaults_to_home_dot_config(tmp_path: Path) -> None:
    found = _write(tmp_path / "home" / ".config" / "orca" / "orca.toml", 1005)
    assert discover(None, {"HOME": str(tmp_path / "home")}) == found
    # a relative XDG_CONFIG_HOME is ignored, as the XDG spec says
    assert discover(None, {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": "rel"}) == found


def test_no_file_gives_builtin_defaults_with_no_source(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "empty"), "HOME": str(tmp_path / "nohome")}
    assert discover(None, env) is None
    cfg = load(None, environ=env)
    assert cfg == Config() and cfg.source is None


@pytest.mark.parametrize("how", ["flag", "env"])
def test_named_file_that_is_missing_is_an_error(how: str, tmp_path: Path) -> None:
    _write(tmp_path / "orca.toml", 1003)  # must not be used as a fall-back
    missing = str(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="no such config file"):
        if how == "flag":
            load(missing, environ={})
        else:
            load(None, environ={"ORCA_CONFIG": missing})


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "orca.toml").write_text("[server\nport = 1\n")
    with pytest.raises(ConfigError) as info:
        load(None, environ={})
    assert str(info.value).startswith("orca.toml: is not valid TOML")
