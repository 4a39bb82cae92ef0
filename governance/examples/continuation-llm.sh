#!/bin/sh
# A continuation agent for `capsule continuation run`, backed by the `llm`
# command-line client (https://llm.datasette.io/).
#
# Use:
#   capsule continuation run capsule.json --agent ./continuation-llm.sh \
#       --pass-env OPENAI_API_KEY --evidence evidence.json
#
# Contract: the capsule arrives on stdin, and the instruction prompt in the
# read-only file that CAPSULE_PROMPT_FILE names (the runner writes it; the
# evidence records its sha256); print one continuation-result/2 JSON object on
# stdout and exit 0. The model decides; this script fills in only what it
# knows better than the model: "schema", "agent" and "capsule_sha256".
#
# Optional settings (pass each with --pass-env NAME):
#   LLM_MODEL  the model to ask (default: gpt-4o-mini)
#   LLM        the llm program (default: llm on PATH)
set -eu

prompt_file=${CAPSULE_PROMPT_FILE:?run this through capsule continuation run}
model=${LLM_MODEL:-gpt-4o-mini}
llm=${LLM:-llm}
slot=${CAPSULE_AGENT_SLOT:?run this through capsule continuation run}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The workspace and HOME are read-only and empty: llm keeps its (unused) user
# folder in scratch space, so no stored keys, logs or past conversations exist.
LLM_USER_PATH="$scratch/llm"
export LLM_USER_PATH

# The prompt goes to the model byte for byte: "$(cat file)" would drop its
# final newline, and its hash would no longer be the one the verdict records.
[ -r "$prompt_file" ] || { echo "cannot read $prompt_file" >&2; exit 1; }
system=$(cat "$prompt_file"; printf x)
system=${system%x}

cat >"$scratch/capsule.json"
"$llm" prompt --no-log --no-stream -m "$model" -s "$system" \
    <"$scratch/capsule.json" >"$scratch/answer.txt"

python3 - "$scratch/capsule.json" "$scratch/answer.txt" "$prompt_file" "$model" "$slot" <<'PY'
import hashlib
import json
import sys

capsule_path, answer_path, prompt_path, model, slot = sys.argv[1:]


def unique(pairs):
    # A key given twice has no single meaning: refuse it rather than keep one.
    keys = [key for key, _ in pairs]
    for key in keys:
        if keys.count(key) > 1:
            raise ValueError(f"duplicate key {key!r} in the model's answer")
    return dict(pairs)


with open(answer_path, encoding="utf-8") as handle:
    answer = handle.read()
# Models often wrap their JSON in a code fence or a sentence: keep the
# outermost object and nothing else. The runner judges what is inside.
start, end = answer.find("{"), answer.rfind("}")
if start < 0 or end < start:
    sys.exit(f"no JSON object in the model's answer: {answer[:200]!r}")
try:
    result = json.loads(answer[start : end + 1], object_pairs_hook=unique)
except ValueError as exc:
    sys.exit(f"the model's answer is not one strict JSON object: {exc}")
if not isinstance(result, dict):
    sys.exit("the model's answer is not a JSON object")

with open(capsule_path, "rb") as handle:
    capsule_sha256 = hashlib.sha256(handle.read()).hexdigest()
with open(prompt_path, "rb") as handle:
    prompt_sha256 = hashlib.sha256(handle.read()).hexdigest()
result["schema"] = "continuation-result/2"
result["agent"] = {
    "id": f"llm:{model}:{slot}",
    "runtime": f"llm CLI, model {model}, prompt sha256 {prompt_sha256}",
}
result["capsule_sha256"] = capsule_sha256
print(json.dumps(result, ensure_ascii=False))
PY
