#!/usr/bin/env bash
# Capture what Claude Code and Codex CLI send, in a loopback-only network namespace.
# Usage (root): unshare -n tests/agents/capture.sh OUTDIR [all|claude|codex|interactive]
# Writes OUTDIR/<scenario>.jsonl (content-free shapes, see capture_server.py).
set -euo pipefail
OUT=${1:?outdir}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-/work/venv/bin/python}
BIN=${ORCA_AGENTS_BIN:-/root/.cache/orca-agents/npm/node_modules/.bin}
ip link set lo up 2>/dev/null || true
mkdir -p "$OUT"
PORT=8799

start_server() {  # $1 = capture file
  "$PY" "$HERE/capture_server.py" --port $PORT --out "$1" &
  SERVER=$!
  for _ in $(seq 1 100); do
    (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && return 0; sleep 0.1
  done
  echo "capture server did not start" >&2; exit 1
}
stop_server() { kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; }

common_env() {
  export HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9
  export https_proxy=$HTTPS_PROXY http_proxy=$HTTP_PROXY
  export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
}

claude_run() {  # $1 = scenario, $2 = nonessential off (1) or on (0)
  local home; home=$(mktemp -d); local work; work=$(mktemp -d)
  start_server "$OUT/$1.jsonl"
  (
    common_env
    export HOME=$home ANTHROPIC_BASE_URL=http://127.0.0.1:$PORT ANTHROPIC_API_KEY=dummy-capture-key
    export DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 DISABLE_AUTOUPDATER=1 DISABLE_BUG_COMMAND=1
    if [ "$2" = 1 ]; then export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1; fi
    cd "$work"
    timeout 120 "$BIN/claude" -p "say hi to the parser module" > "$OUT/$1.turn1.out" 2> "$OUT/$1.turn1.err" || echo "turn1 rc=$?" >> "$OUT/$1.rc"
    timeout 120 "$BIN/claude" -p --continue "now say bye to the parser module" > "$OUT/$1.turn2.out" 2> "$OUT/$1.turn2.err" || echo "turn2 rc=$?" >> "$OUT/$1.rc"
  )
  stop_server
}

codex_run() {
  local home; home=$(mktemp -d); local work; work=$(mktemp -d)
  start_server "$OUT/$1.jsonl"
  cat > "$home/config.toml" <<TOML
model = "orca/coding"
model_provider = "orca"
model_reasoning_effort = "low"

[model_providers.orca]
name = "orca"
base_url = "http://127.0.0.1:$PORT/v1"
env_key = "ORCA_KEY"
wire_api = "responses"

[analytics]
enabled = false

[otel]
exporter = "none"
TOML
  (
    common_env
    export CODEX_HOME=$home ORCA_KEY=dummy-capture-key HOME=$home
    cd "$work"
    timeout 120 "$BIN/codex" exec --skip-git-repo-check "say hi" > "$OUT/$1.turn1.out" 2> "$OUT/$1.turn1.err" || echo "turn1 rc=$?" >> "$OUT/$1.rc"
    timeout 120 "$BIN/codex" exec --skip-git-repo-check resume --last "say hi again" > "$OUT/$1.turn2.out" 2> "$OUT/$1.turn2.err" || echo "turn2 rc=$?" >> "$OUT/$1.rc"
  )
  stop_server
}

interactive_run() {  # $1 = scenario, $2 = claude|codex, $3 = nonessential off (1) or on (0)
  start_server "$OUT/$1.jsonl"
  PYTHONPATH="$HERE/../.." "$PY" "$HERE/capture_interactive.py" "$2" "$BIN/$2" $PORT "$3" 20 2> "$OUT/$1.screen" || true
  stop_server
}

case "${2:-all}" in
  interactive)
    interactive_run claude-interactive claude 0
    interactive_run claude-interactive-nonessential-off claude 1
    interactive_run codex-tui codex 0 ;;
  claude) claude_run claude-default 0; claude_run claude-nonessential-off 1 ;;
  codex) codex_run codex ;;
  all) claude_run claude-default 0; claude_run claude-nonessential-off 1; codex_run codex
    interactive_run claude-interactive claude 0
    interactive_run claude-interactive-nonessential-off claude 1
    interactive_run codex-tui codex 0 ;;
esac
