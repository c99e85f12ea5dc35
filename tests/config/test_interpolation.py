"""`${VAR}` interpolation (SPEC §2): required only in enabled channels."""

from __future__ import annotations

from typing import Any

import pytest

from orca_cli.config import Secret, parse
from orca_cli.errors import ConfigError

from .helpers import errors_of, minimal_doc


def _with_channel(**fields: Any) -> dict[str, Any]:
    doc = minimal_doc()
    doc["channels"][0].update(fields)
    return doc


@pytest.mark.parametrize(
    ("raw", "env", "want"),
    [
        ("${A}", {"A": "x"}, "x"),
        ("pre-${A}-post", {"A": "x"}, "pre-x-post"),
        ("${A}${B}", {"A": "1", "B": "2"}, "12"),
        ("${A:-fallback}", {}, "fallback"),
        ("${A:-fallback}", {"A": ""}, "fallback"),
        ("${A:-fallback}", {"A": "set"}, "set"),
        ("${A}", {"A": ""}, ""),
        ("$${A}", {"A": "x"}, "${A}"),
        ("no vars $ here", {}, "no vars $ here"),
    ],
)
def test_interpolation_forms(raw: str, env: dict[str, str], want: str) -> None:
    doc = minimal_doc()
    doc["state"] = {"sentinel_service": raw}
    assert parse(doc, environ=env).state.sentinel_service == want


def test_keys_become_secrets_from_the_environment() -> None:
    cfg = parse(_with_channel(keys=["${K1}", "literal"]), environ={"K1": "sk-one"})
    keys = cfg.channels[0].keys
    assert all(isinstance(k, Secret) for k in keys)
    assert [k.reveal() for k in keys] == ["sk-one", "literal"]
    assert "sk-one" not in repr(cfg)


def test_unset_variable_of_enabled_channel_names_the_key_path() -> None:
    doc = _with_channel(keys=["${K1}", "${K2}"])
    with pytest.raises(ConfigError) as info:
        parse(doc, source="orca.toml", environ={"K1": "x"})
    assert info.value.key == "channels[0].keys[1]"
    assert "K2" in info.value.why and "not set" in info.value.why
    assert str(info.value).startswith("orca.toml: channels[0].keys[1]: environment variable K2")


def test_unset_variable_of_disabled_channel_drops_that_key() -> None:
    doc = _with_channel(enabled=False, keys=["${K1}", "${K2}"], base_url="${NOPE}")
    cfg = parse(doc, environ={"K1": "x"})
    ch = cfg.channels[0]
    assert [k.reveal() for k in ch.keys] == ["x"]
    assert ch.base_url == "sim://local"  # the dropped value falls back to the type default


def test_optional_key_with_empty_default_is_skipped_in_enabled_channel() -> None:
    cfg = parse(_with_channel(keys=["${K1}", "${K2:-}"]), environ={"K1": "x"})
    assert [k.reveal() for k in cfg.channels[0].keys] == ["x"]


def test_literal_empty_key_of_enabled_channel_is_an_error() -> None:
    assert errors_of(_with_channel(keys=[""])) == ["channels[0].keys[0]: must not be empty"]


def test_unset_variable_outside_channels_is_an_error() -> None:
    doc = minimal_doc()
    doc["server"] = {"inbound_token": "${ORCA_TOKEN}"}
    (err,) = errors_of(doc)
    assert err.startswith("server.inbound_token: environment variable ORCA_TOKEN is not set")


def test_malformed_reference_is_an_error_even_in_disabled_channel() -> None:
    (err,) = errors_of(_with_channel(enabled=False, keys=["${1BAD}"]))
    assert err.startswith("channels[0].keys[0]: has a malformed ${...}")


def test_every_string_is_interpolated() -> None:
    doc = minimal_doc()
    doc["aliases"] = {"x-*": "${TARGET}"}
    doc["server"] = {"allowed_hosts": ["${HOSTNAME_A}"]}
    doc["channels"][0]["model_map"] = {"cheap": "${UPSTREAM}"}
    env = {"TARGET": "orca/coding", "HOSTNAME_A": "box.local", "UPSTREAM": "up-cheap"}
    cfg = parse(doc, environ=env)
    assert cfg.aliases == {"x-*": "orca/coding"}
    assert cfg.server.allowed_hosts == ("box.local",)
    assert cfg.channels[0].upstream_model("cheap") == "up-cheap"
