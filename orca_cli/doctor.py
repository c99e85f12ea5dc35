"""`orca doctor`: every check an operator needs before trusting the sidecar, each problem with
its fix. Checks: the config loads and passes `config check`; the store answers (and whether it
detected a state loss); each enabled channel's upstream accepts a TCP connection (`--probe`
reads the provider's model list — every configured model must be on it, and what it says of
a model's limits must not contradict the config — then sends one tiny real request per format
the channel speaks — Chat Completions, Messages or the Responses API); the port is free or
held by a sidecar that answers `/healthz`; the admin token file exists with mode 0600.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import os
import re
import socket
import stat
import time
from collections.abc import Collection, Mapping
from typing import Any, Literal, TypeGuard
from urllib.parse import urlsplit

import httpx

from orca_cli.clock import SystemClock
from orca_cli.config.schema import ChannelConfig, Config, ModelConfig
from orca_cli.immutable import immutable
from orca_cli.translate.claude import claude_traits
from orca_cli.types import Api

__all__ = ["Check", "channel_apis", "run_checks"]

Status = Literal["ok", "warn", "fail"]


@immutable
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail,
                "fix": self.fix or None}


async def _store_check(cfg: Config) -> Check:
    from orca_cli.state.factory import open_store

    try:
        store = open_store(cfg.state, clock=SystemClock())
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        return Check("store", "fail", f"cannot open the {cfg.state.backend} store: {exc}",
                     "fix [state] in the config")
    try:
        await store.ping()
        lost = [e for e in await store.list_audit() if e.get("event") == "state_lost"]
    except Exception as exc:  # noqa: BLE001
        return Check("store", "fail", f"{cfg.state.backend} store does not answer: "
                     f"{type(exc).__name__}", "start Redis or check [state].redis_url; the "
                     "sidecar still serves (base tier) while the store is down")
    finally:
        with contextlib.suppress(Exception):
            await store.close()
    if lost:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(lost[0].get("ts", 0))))
        return Check("store", "warn", f"{cfg.state.backend} answers; a state loss was detected "
                     f"at {when} (share caps restarted with an inverted warm-up)",
                     "give Redis persistence (appendonly) if tier state must survive restarts")
    return Check("store", "ok", f"{cfg.state.backend} store answers")


async def _tcp(host: str, port: int, timeout: float) -> str | None:
    try:
        _r, w = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except (TimeoutError, OSError) as exc:
        return type(exc).__name__ if not str(exc) else str(exc)
    w.close()
    with contextlib.suppress(Exception):
        await w.wait_closed()
    return None


async def _channel_check(ch: ChannelConfig, cfg: Config, probe: bool) -> Check:
    name = f"channel {ch.name}"
    if ch.type == "sim":
        return Check(name, "ok", "sim channel (answers in process)")
    if not ch.keys and not ch.pass_through_auth:
        return Check(name, "fail", "no usable key", f"set channels.{ch.name}.keys (e.g. "
                     '"${PROVIDER_API_KEY}") or disable the channel')
    url = urlsplit(ch.base_url)
    host = url.hostname or ""
    port = url.port or (443 if url.scheme == "https" else 80)
    err = await _tcp(host, port, min(5.0, cfg.server.connect_timeout_s))
    if err is not None:
        return Check(name, "fail", f"cannot connect to {host}:{port}: {err}",
                     f"check channels.{ch.name}.base_url and the network")
    if not probe:
        return Check(name, "ok", f"{host}:{port} accepts connections (--probe sends a request)")
    return await _probe(ch, name, cfg)


def _probe_request(ch: ChannelConfig, api: Api, model: str) -> tuple[str, dict[str, Any]]:
    """(endpoint path, body) of the smallest request of format `api` to `model`."""
    upstream = ch.upstream_model(model)
    if api == "responses":
        # 16 is the Responses API's smallest max_output_tokens; store: false keeps nothing
        return "/v1/responses", {"model": upstream, "input": "ping",
                                 "max_output_tokens": 16, "store": False}
    path = "/v1/messages" if api == "anthropic" else "/v1/chat/completions"
    return path, {"model": upstream, "max_tokens": 1,
                  "messages": [{"role": "user", "content": "ping"}]}


def channel_apis(ch: ChannelConfig) -> tuple[Api, ...]:
    """The formats a channel speaks: `apis` when the config lists several, else `api`."""
    apis = getattr(ch, "apis", None)
    if isinstance(apis, (tuple, list)) and apis:
        return tuple(apis)
    return (ch.api,)


async def _probe(ch: ChannelConfig, name: str, cfg: Config) -> Check:
    """The provider's model list first (no tokens spent): a configured model it does not
    serve — retired, or misspelled — fails the check by name, and what the list says of a
    served one that the config contradicts warns (`model_notes`). Then one tiny request per
    format the channel speaks (Chat Completions, Messages, Responses), to the first model the
    list has: a channel listing `["responses", "openai"]` must answer both endpoints."""
    async with httpx.AsyncClient(timeout=20) as client:
        listed, unlisted_why = await _list_models(client, ch)
        missing = [] if listed is None else [
            m for m in ch.models if not serves(listed, ch.upstream_model(m))]
        model = next((m for m in ch.models if m not in missing), ch.models[0] if ch.models else "")
        answered: list[str] = []
        for api in channel_apis(ch):
            result = await _probe_one(client, ch, name, api, model)
            if isinstance(result, Check):
                return result
            answered.append(f"{result} ({api})")
    probed = f"probe of {model} answered {', '.join(answered)}"
    if listed is None:
        return Check(name, "ok", f"{probed}; its model list is unavailable ({unlisted_why}), so "
                     "the other models were not checked")
    if missing:
        return Check(name, "fail", f"{probed}; not among the {len(listed)} models it lists: "
                     + ", ".join(_unserved(ch, m, listed) for m in missing),
                     "retired or misspelled: a request routed to such a model fails upstream "
                     f"with a 404; replace each in channels.{ch.name}.models (or model_map) and "
                     "in the routers that list it")
    served = f"{probed}; all {len(ch.models)} of its models are among the {len(listed)} it lists"
    notes = [f"{m}: {note}" for m in ch.models
             for note in model_notes(cfg.models.get(m), ch.upstream_model(m),
                                     listed.get(serving(listed, ch.upstream_model(m)) or "", {}))]
    if notes:
        return Check(name, "warn", f"{served}; the provider says otherwise of "
                     + "; ".join(notes), "correct the [models] table of each model named")
    return Check(name, "ok", served)


_DATED = re.compile(r"-\d{8}$")
_LIST_PAGES = 20  # Anthropic's list pages at most 1,000 models a page


def serves(listed: Collection[str], upstream: str) -> bool:
    """Whether a provider listing `listed` serves the model id `upstream`: listed as is, or an
    undated alias whose dated snapshot is listed (Anthropic lists `claude-haiku-4-5-20251001`
    and serves `claude-haiku-4-5` too)."""
    return serving(listed, upstream) is not None


def serving(listed: Collection[str], upstream: str) -> str | None:
    """The listed id that serves `upstream` (`serves`), or None."""
    if upstream in listed:
        return upstream
    return next((m for m in sorted(listed, reverse=True)
                 if _DATED.search(m) and _DATED.sub("", m) == upstream), None)


def model_notes(config: ModelConfig | None, upstream: str, entry: Mapping[str, Any]
                ) -> list[str]:
    """What a provider's model list says of a model (Anthropic's gives its limits and
    capabilities; OpenAI's gives neither) that the config contradicts: a `context_window` or
    `max_output_tokens` above the model's own limit (a request between is refused upstream
    instead of being compacted or lowered), `vision` on a model that reads no images, and a
    Claude thinking form orca judges wrongly by the id (`translate.claude`)."""
    notes: list[str] = []
    window, output = entry.get("max_input_tokens"), entry.get("max_tokens")
    if config is not None and _positive(window) and config.context_window > window:
        notes.append(f"context_window {config.context_window} is above its max_input_tokens "
                     f"{window}")
    if (config is not None and config.max_output_tokens is not None and _positive(output)
            and config.max_output_tokens > output):
        notes.append(f"max_output_tokens {config.max_output_tokens} is above its max_tokens "
                     f"{output}")
    caps = entry.get("capabilities")
    caps = caps if isinstance(caps, dict) else {}
    if (config is None or config.vision) and _supported(caps.get("image_input")) is False:
        notes.append("it reads no images: set vision = false")
    types = (caps.get("thinking") or {}).get("types") if isinstance(caps.get("thinking"),
                                                                   dict) else None
    traits = claude_traits(upstream)
    if traits is not None and isinstance(types, dict):
        adaptive, budget = _supported(types.get("adaptive")), _supported(types.get("enabled"))
        listed = ("both" if adaptive and budget else "adaptive" if adaptive
                  else "budget" if budget else None)
        if listed is not None and listed != traits.thinking:
            notes.append(f"it takes {listed} thinking, where orca judges {traits.thinking} by "
                         "its id")
    return notes


def _positive(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _supported(capability: object) -> bool | None:
    """A capability's `supported` flag, None when the list does not say."""
    flag = capability.get("supported") if isinstance(capability, dict) else None
    return flag if isinstance(flag, bool) else None


def _unserved(ch: ChannelConfig, model: str, listed: Collection[str]) -> str:
    upstream = ch.upstream_model(model)
    near = difflib.get_close_matches(upstream, sorted(listed), n=2, cutoff=0.6)
    said = ([f"upstream {upstream}"] if upstream != model else []) + (
        [f"nearest {' or '.join(near)}"] if near else [])
    return f"{model} ({'; '.join(said)})" if said else model


async def _list_models(client: httpx.AsyncClient, ch: ChannelConfig
                       ) -> tuple[dict[str, dict[str, Any]] | None, str]:
    """The models the provider lists (`GET …/models`, every page), by id, or None and why
    not. A Gemini id `models/gemini-…` counts as `gemini-…`."""
    from orca_cli.proxy.transport import models_list_url

    api = channel_apis(ch)[0]
    headers = _headers(ch, api)
    ids: dict[str, dict[str, Any]] = {}
    params: dict[str, str | int] = {"limit": 1000} if api == "anthropic" else {}
    for _ in range(_LIST_PAGES):
        try:
            r = await client.get(models_list_url(ch.base_url), params=params, headers=headers)
            doc = r.json() if r.status_code < 300 else None
        except (httpx.HTTPError, ValueError) as exc:
            return None, type(exc).__name__
        if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
            return None, f"HTTP {r.status_code}" if r.status_code >= 300 else "not a model list"
        ids.update((m["id"].removeprefix("models/"), m) for m in doc["data"]
                   if isinstance(m, dict) and isinstance(m.get("id"), str))
        last = doc.get("last_id")
        if not (doc.get("has_more") and isinstance(last, str)):
            break
        params = {**params, "after_id": last}
    return ids, ""


async def _probe_one(client: httpx.AsyncClient, ch: ChannelConfig, name: str, api: Api,
                     model: str) -> Check | int:
    """The success status, or the failed check."""
    from orca_cli.proxy.transport import upstream_url

    path, body = _probe_request(ch, api, model)
    try:
        r = await client.post(upstream_url(ch, api, path), json=body,
                              headers=_headers(ch, api))
    except httpx.HTTPError as exc:
        return Check(name, "fail", f"{api} probe failed: {type(exc).__name__}",
                     "check the network")
    if r.status_code < 300:
        return r.status_code
    fix = {401: "the key is rejected: rotate it", 402: "the account needs credit",
           404: f"the model {model!r} or the {path} endpoint is unknown upstream: check "
                f"models / model_map / api"}.get(r.status_code, "see the provider's status page")
    return Check(name, "fail", f"{api} probe of {model} answered {r.status_code}", fix)


def _headers(ch: ChannelConfig, api: Api) -> dict[str, str]:
    """The channel's first key in format `api`'s own header (and Anthropic's version), what
    every doctor request to the provider carries."""
    from orca_cli.proxy.transport import anthropic_version_header, auth_headers

    headers = dict(auth_headers(api, ch.keys[0].reveal())) if ch.keys else {}
    if api == "anthropic":
        headers.update(anthropic_version_header(()))
    return headers


def _port_check(cfg: Config) -> Check:
    host, port = cfg.server.host, cfg.server.port
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        sock.bind((host, port))
    except OSError:
        try:
            r = httpx.get(f"http://{host}:{port}/healthz", timeout=2)
            doc = r.json()
            return Check("port", "ok", f"{host}:{port} is held by a running sidecar "
                         f"(status {doc.get('status')})")
        except Exception:  # noqa: BLE001
            return Check("port", "fail", f"{host}:{port} is in use by something else",
                         "stop it or set [server].port / `orca serve --port`")
    finally:
        sock.close()
    return Check("port", "ok", f"{host}:{port} is free")


def _token_check() -> Check:
    from orca_cli.proxy.token import admin_token_path

    path = admin_token_path()
    try:
        st = os.stat(path)
    except OSError:
        return Check("admin token", "warn", f"{path} does not exist",
                     "start `orca serve` (it writes a fresh token each start)")
    if stat.S_IMODE(st.st_mode) & 0o077:
        return Check("admin token", "fail", f"{path} is readable by others",
                     f"chmod 600 {path}")
    return Check("admin token", "ok", f"{path} (mode 0600)")


async def run_checks(cfg: Config, *, probe: bool = False) -> list[Check]:
    from orca_cli.config.load import check as config_check

    issues = config_check(cfg)
    errors = [i for i in issues if i.severity == "error"]
    out = [Check("config", "fail" if errors else ("warn" if issues else "ok"),
                 f"{cfg.source or 'built-in defaults'}: "
                 + ("; ".join(str(i) for i in issues) if issues else "valid"),
                 "run `orca config check` and fix each key it names" if issues else "")]
    if cfg.source is None and not cfg.channels:  # what `orca serve` refuses to start on
        out[0] = Check("config", "warn", "no config file: the built-in defaults have no "
                       "channel, and `orca serve` refuses to start without a config",
                       "run `orca init` (a config whose sim channels answer offline)")
    out.append(await _store_check(cfg))
    out.extend(await asyncio.gather(*(_channel_check(ch, cfg, probe)
                                      for ch in cfg.enabled_channels())))
    out.append(_port_check(cfg))
    out.append(_token_check())
    return out
