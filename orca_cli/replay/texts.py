"""What the synthetic developer types and the agent answers (SPEC §10, seed §5.1).

* `SYSTEM_PROMPTS` and `TOOLS`: the ~2.3 KB system prompt and the two-tool definition
  (`read_file`, `run_command`) every request carries.
* `trivial_ask`: one-line edits ("rename `cfg` to `config` in load.go"), with the agent's short
  reply. They score near the seed's 0.21 on the delta.
* `hard_ask`: a reasoning-heavy debugging ask — at least six reasoning cues and six math
  markers, so both capped features saturate (seed §6.2) — to which the corpus appends a 3–8 KB
  paste. With the paste a hard turn scores ≈ 0.72 on the delta; the prose alone ≈ 0.63
  (the seed's first corpus, without pastes, peaked at 0.658).
* `FAILURE_PROMPTS`: the one short prompt a failure-loop session repeats.
"""

from __future__ import annotations

import random
from typing import Any

from orca_cli.replay.scenarios import Repo, Scenario

__all__ = [
    "FAILURE_PROMPTS",
    "SYSTEM_PROMPTS",
    "TOOL_SPECS",
    "fix_note",
    "hard_ask",
    "hard_reply",
    "trivial_ask",
]

_SYSTEM_BASE = (
    "You are {name}, an interactive coding agent working in the user's repository through "
    "the tools provided. Your job is to help with software engineering tasks: fixing bugs, "
    "adding features, refactoring, explaining code and running the project's checks.\n\n"
    "# Working style\n"
    "- Be concise. Answer in a few sentences unless the user asks for detail. Do not add "
    "preamble or a summary of what you are about to do; just do it.\n"
    "- Before editing a file, read it. Prefer small, focused changes that match the "
    "surrounding conventions: naming, formatting, error handling, imports and tests.\n"
    "- Never invent file paths, APIs or command-line flags. If something is unclear, look it "
    "up in the repository first, and ask the user only when the repository cannot tell you.\n"
    "- After a change, run the relevant checks (build, unit tests, linters) with "
    "run_command and report failures honestly. Do not claim something works unless you ran "
    "it.\n"
    "- Keep the working tree tidy: no stray debug prints, temporary files or commented-out "
    "blocks. Do not commit unless asked to.\n\n"
    "# Safety\n"
    "- Do not run destructive commands (deleting directories, force-pushing, rewriting "
    "history, dropping databases) without an explicit request from the user.\n"
    "- Treat secrets with care: never print tokens or keys you find in the environment or "
    "in configuration files, and never send them anywhere.\n\n"
    "# Tools\n"
    "- read_file(path, offset, limit): read part of a file; use it before every edit.\n"
    "- run_command(command, timeout_s): run a shell command in the repository root; prefer "
    "the project's own scripts (make, npm run, go test, pytest) over ad-hoc invocations.\n\n"
    "# Output\n"
    "When you reference code, give the path and line so the user can jump to it. Use fenced "
    "blocks only for code the user should copy. When a task is done, say so in one line and "
    "stop; the user will ask for more if they want it. If you are blocked, say what you tried "
    "and what you need from the user to continue. Respect the repository's own contributor "
    "guide when there is one, and the user's instructions over both.\n\n"
    "# Environment\n"
    "Working directory: /home/dev/{repo}. Platform: linux. Shell: bash. {extra}"
)

SYSTEM_PROMPTS: tuple[str, ...] = (
    _SYSTEM_BASE.format(name="the repository assistant", repo="orders",
                        extra="Git repository: yes. Default branch: main."),
    _SYSTEM_BASE.format(name="a pair-programming agent", repo="orders",
                        extra="Network access is restricted; installing packages needs the "
                              "user's approval."),
)

# (name, description, JSON schema): the two tools of every request.
TOOL_SPECS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("read_file", "Read a file from the repository. Returns numbered lines.", {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path relative to the repo root."},
            "offset": {"type": "integer", "description": "First line to read (1-based)."},
            "limit": {"type": "integer", "description": "Maximum number of lines."},
        },
        "required": ["path"],
    }),
    ("run_command", "Run a shell command in the repository root and return its output and "
     "exit code.", {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line to run."},
            "timeout_s": {"type": "integer", "description": "Kill after this many seconds."},
        },
        "required": ["command"],
    }),
)

# (ask, reply) templates: {file} {func} {old} {new} {a} {b} are drawn from the session's Repo.
_TRIVIAL: tuple[tuple[str, str], ...] = (
    ("Rename `{old}` to `{new}` in {file}.",
     "Done — renamed `{old}` to `{new}` in `{file}` ({a} references). Nothing else used it."),
    ("Add a nil check before we dereference `{old}` in {func}.",
     "Added the check at the top of `{func}` in `{file}`; it returns early with a clear "
     "message when `{old}` is missing."),
    ("Make the timeout message say seconds instead of s.",
     "Updated the message in `{file}:{a}`; it now reads `timed out after {b} seconds`."),
    ("Sort the imports in {file}.", "Sorted the import block in `{file}`. The build passes."),
    ("Change the default port to {a}80.",
     "Changed the default in `{file}` to {a}80 and updated the README example."),
    ("Bump the retry limit from {a} to {b}.", "Set the retry limit to {b} in `{file}`."),
    ("Fix the typo in the README: 'recieve' should be 'receive'.",
     "Fixed both occurrences of 'recieve' in README.md."),
    ("Can you add a --verbose flag to the CLI?",
     "Added `--verbose` to the CLI in `{file}`; it sets the log level to debug."),
    ("Move the `{func}` helper into {file}.",
     "Moved `{func}` into `{file}` and updated the two call sites."),
    ("Add a docstring to `{func}`.", "Added a one-paragraph docstring to `{func}` in `{file}`."),
    ("Make `{func}` log at debug level instead of info.",
     "Switched the log call in `{func}` to debug level."),
    ("Delete the unused `{func}` variant in {file}.",
     "Removed the unused variant from `{file}`; nothing referenced it."),
    ("Add .env to the gitignore.", "Added `.env` to `.gitignore`."),
    ("Replace the hard-coded path in {file} with the config value.",
     "`{file}` now reads the path from the config; the old literal is gone."),
    ("Add a unit test for `{func}` with an empty input.",
     "Added a test for `{func}` with an empty input next to `{file}`; it passes."),
    ("Update the copyright year in the license header of {file}.",
     "Updated the header in `{file}` to 2026."),
    ("Wrap the long line in {func} at 100 characters.", "Wrapped it; no behaviour change."),
    ("Use the shared logger in {file} instead of printing.",
     "Replaced the {a} print calls in `{file}` with the shared logger."),
)


# The hunk an agent shows after a small edit, per language.
_SNIPPETS: dict[str, str] = {
    "go": "\n```go\nfunc {func}(ctx context.Context, {new} *Config) error {{\n\tif {new} == nil "
          "{{\n\t\treturn errNilConfig\n\t}}\n\treturn nil\n}}\n```",
    "python": "\n```python\ndef {func}(self, {new}: Settings | None = None) -> None:\n"
              "    if {new} is None:\n        raise ValueError(\"{new} is required\")\n"
              "    self._{new} = {new}\n```",
    "rust": "\n```rust\npub fn {func}({new}: &Config) -> Result<(), Error> {{\n"
            "    let {new} = {new}.clone();\n    Ok(())\n}}\n```",
    "ts": "\n```ts\nexport function {func}({new}: Config): void {{\n  if (!{new}) {{\n"
          "    throw new Error('{new} is required');\n  }}\n}}\n```",
}


def trivial_ask(rng: random.Random, repo: Repo) -> tuple[str, str]:
    """One trivial edit in `repo`: (the user's ask, the agent's reply — three times in ten with
    the edited hunk)."""
    ask, reply = _TRIVIAL[rng.randrange(len(_TRIVIAL))]
    old, new = repo.names[rng.randrange(len(repo.names))]
    fill = {"file": repo.files[rng.randrange(len(repo.files))], "old": old, "new": new,
            "func": repo.funcs[rng.randrange(len(repo.funcs))], "a": rng.randrange(2, 9),
            "b": rng.randrange(10, 60)}
    if rng.random() < 0.3:
        reply += _SNIPPETS[repo.lang]
    return ask.format(**fill), reply.format(**fill)


_INTROS = (
    "I'm stuck on a bug in {component} and I want a real analysis, not a guess. Under load "
    "({workers} workers) it occasionally hands out the same entry twice, and every few hours "
    "it crashes with the {paste} below.",
    "Something is wrong in {component}: with {workers} concurrent callers the counters drift "
    "and once a day we get the {paste} below. It never reproduces locally.",
    "We shipped the {type} refactor on Monday and since then {component} fails a few times a "
    "day under {workers} workers; the {paste} is below.",
)
_FOLLOW_UPS = (
    "Your change to `{m1}` made it rarer but it still happens: {n} failures in {k} runs with "
    "{workers} workers. New {paste} below.",
    "That didn't fix it. With the patch applied I get the {paste} below after about {n} "
    "minutes of load.",
    "Still broken after the fix — same symptom, different stack. {paste} below.",
)
# (sentence, reasoning cues it carries) — counted by the SPEC §4 vocabulary.
_CUES: tuple[tuple[str, int], ...] = (
    ("I think there's a race condition between `{m1}` and `{m2}`, but I can't find the root "
     "cause.", 2),
    ("Why would the invariant break if every writer holds `{lock}`?", 2),
    ("Can you prove the lock ordering is deadlock-free, or give me a counterexample?", 3),
    ("What is the trade-off between sharding `{type}` and keeping one lock, in terms of "
     "complexity and tail latency?", 2),
    ("It is intermittent, maybe one run in fifty, which is why I suspect a concurrency bug "
     "rather than bad input.", 3),
    ("My hypothesis is that `{m1}` reads the entry after releasing `{lock}`, so two callers "
     "can act on the same stale value; is there a subtle window I'm missing?", 2),
    ("What does `{type}` actually guarantee to callers when `{m2}` runs at the same time?", 1),
    ("I need the root cause, not a workaround: the correctness of the retry path depends on "
     "it.", 2),
    ("Walk me through the worst case interleaving and the edge case where the queue is empty.",
     2),
    ("Could starvation explain the latency spikes, or is this closer to a livelock?", 2),
)
# (sentence, math markers it carries).
_MATH: tuple[tuple[str, int], ...] = (
    ("The sweep re-sorts a heap on every pass, so `{m2}` is O(n log n) per sweep instead of "
     "O(log n) per removal.", 2),
    ("If the hit probability under our key distribution is about 0.9, what is the expected "
     "value of the time `{lock}` is held per request?", 2),
    ("Treat it like a lemma: state the assumptions, then the argument.", 1),
    ("Is the amortized cost of `{m1}` still O(1) once the backlog grows?", 2),
    ("With k shards the contention should fall like 1/k, but the retries grow like n^2 in "
     "the number of writers; is that the right model, and what is the probability two hot "
     "keys share a shard?", 2),
    ("Can you bound the variance of the wait time with an inequality I can check against "
     "the benchmark?", 2),
    ("I tried an induction argument over the number of pending operations but got stuck on "
     "the recurrence.", 2),
    ("The backoff is exponential, so after 10 attempts we wait 2^10 times the base delay.", 2),
)
_CLOSINGS = (
    "Please state the assumptions, then the argument, then the fix.",
    "Explain it first; I'll decide on the fix after.",
    "Don't change any code yet.",
)
MIN_FEATURE_HITS = 6  # one over the SPEC §4 cap of 5, so each capped feature saturates


def _pick(rng: random.Random, pool: tuple[tuple[str, int], ...]) -> list[str]:
    order = rng.sample(range(len(pool)), len(pool))
    chosen: list[str] = []
    hits = 0
    for i in order:
        if hits >= MIN_FEATURE_HITS:
            break
        chosen.append(pool[i][0])
        hits += pool[i][1]
    return chosen


def hard_ask(rng: random.Random, sc: Scenario, paste_name: str, *, follow_up: bool) -> str:
    """The prose of a hard debugging turn; the corpus appends the pasted trace or source."""
    fill = {"component": sc.component, "workers": sc.workers, "type": sc.type, "m1": sc.m1,
            "m2": sc.m2, "lock": sc.lock, "paste": paste_name, "n": rng.randrange(3, 12),
            "k": rng.randrange(40, 200)}
    opening = (_FOLLOW_UPS if follow_up else _INTROS)[rng.randrange(3)]
    sentences = [*_pick(rng, _CUES), *_pick(rng, _MATH)]
    rng.shuffle(sentences)
    middle = " ".join(sentences[: len(sentences) // 2]), " ".join(sentences[len(sentences) // 2:])
    text = "\n\n".join((opening, *middle, _CLOSINGS[rng.randrange(len(_CLOSINGS))]))
    return text.format(**fill)


_REPLIES = (
    "Short version: `{m1}` drops `{lock}` between the lookup and the promotion, and `{m2}` can "
    "run in that gap. The entry it promotes may already be unlinked, which is how the index "
    "and the list disagree. Two readers can also both observe the stale entry and both "
    "promote it. The fix is to re-check the entry after taking the write lock (or to do the "
    "promotion under one critical section), and to make `{m2}` remove from the index and the "
    "list in the same step. I would not shard yet: the contention numbers you gave do not "
    "need it, and sharding makes the sweep's ordering harder to reason about.",
    "I read the paste and `{file}`. The crash is a symptom; the bug is the window in `{m1}` "
    "between releasing and re-taking `{lock}`. Under {workers} workers that window is hit a "
    "few times a day, which matches what you see. I'd fix it by holding the lock across the "
    "check-and-update, add a stress test that runs `{m1}` and `{m2}` concurrently for a few "
    "seconds, and measure the tail latency before and after.",
)


def hard_reply(rng: random.Random, sc: Scenario) -> str:
    """The agent's answer to a hard turn (history only; the delta never reads it)."""
    reply = _REPLIES[rng.randrange(len(_REPLIES))]
    return reply.format(m1=sc.m1, m2=sc.m2, lock=sc.lock, file=sc.file, workers=sc.workers)


FAILURE_PROMPTS: tuple[str, ...] = (
    "fix the build",
    "The build is failing again, please fix it.",
    "still doesn't compile, fix it",
    "Fix the compile errors and rerun the build.",
    "can you get the build green?",
)

_FIX_NOTES = (
    "I updated the call site in `{file}` to match the new signature; rebuilding.",
    "Changed the import in `{file}` and adjusted the argument type; running the build again.",
    "Reverted the helper rename in `{file}` so the reference resolves; rebuilding.",
    "Added the missing conversion in `{file}`; checking the build.",
)


def fix_note(rng: random.Random, repo: Repo) -> str:
    """What the agent says before it reruns a failing build."""
    note = _FIX_NOTES[rng.randrange(len(_FIX_NOTES))]
    return note.format(file=repo.files[rng.randrange(len(repo.files))])
