#!/usr/bin/env bash
# Oracle's Agent Spec conformance test suite against flowrun (flowrun_agentspec/ beside this
# file is the runtime class the suite loads). The suite is not on PyPI nor on the main branch of
# oracle/agent-spec: it is taken at run time from a clone of the repository (AGENT_SPEC_REPO, a
# git dir holding commit 309c15db of its conformance-test-suite branch) and never copied into
# this repository. It needs pyagentspec and FastAPI, so it runs in a venv of its own
# (CTS_VENV). No real model is reachable here: the LLM URLs the suite asks for point at its own
# deterministic server, so the tests that need a real model fail.
# The suite's MCP server is written for mcp 1.x (FastMCP) and flowrun's MCP client needs mcp 2.x,
# which one interpreter cannot hold both of: the script starts that server (port 5007) from a
# second venv of its own (CTS_VENV-mcp1) before the suite, whose own start of it then fails on
# the import and leaves this one serving.
#   bench/agentspec_conformance/run.sh            # prints the counts, writes junit.xml in CTS_OUT
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo_root="$(cd "$here/../.." && pwd)"
AGENT_SPEC_REPO="${AGENT_SPEC_REPO:-/work/.mirror/oracle+agent-spec/repo}"
COMMIT="${CTS_COMMIT:-309c15db}"
CTS_VENV="${CTS_VENV:-${TMPDIR:-/tmp}/flowrun-agentspec-cts-venv}"
CTS_OUT="${CTS_OUT:-${TMPDIR:-/tmp}/flowrun-agentspec-cts}"
rm -rf "$CTS_OUT" && mkdir -p "$CTS_OUT"
git --git-dir "$AGENT_SPEC_REPO" archive "$COMMIT" conformance_test_suite | tar -x -C "$CTS_OUT"
if [ ! -x "$CTS_VENV/bin/python" ]; then
  python3 -m venv "$CTS_VENV"
  "$CTS_VENV/bin/pip" install -q pyagentspec 'fastapi[standard]' pytest \
    pytest-timeout allure-pytest sqlalchemy requests numpy oracledb psycopg2-binary
  "$CTS_VENV/bin/pip" install -q -e "$repo_root[mcp]"
fi
if [ ! -x "$CTS_VENV-mcp1/bin/python" ]; then
  python3 -m venv "$CTS_VENV-mcp1"
  "$CTS_VENV-mcp1/bin/pip" install -q 'mcp>=1.24.0,<2.0.0' uvicorn
fi
suite="$CTS_OUT/conformance_test_suite"
export RUNTIME_CLASS_IMPORT_PATH=flowrun_agentspec.FlowrunAgentSpecLoader
export PYTHONPATH="$here:$suite/src${PYTHONPATH:+:$PYTHONPATH}"
export LLAMA_API_URL=http://127.0.0.1:5006 LLAMA70BV33_API_URL=http://127.0.0.1:5006 OSS_API_URL=http://127.0.0.1:5006
export OPENAI_API_KEY="${OPENAI_API_KEY:-not-needed}"
cd "$suite"
(cd tests/mcp && exec "$CTS_VENV-mcp1/bin/python" -m uvicorn mcp_server:app --port 5007 \
  > "$CTS_OUT/mcp_server.log" 2>&1) &
mcp_server=$!
trap 'kill "$mcp_server" 2>/dev/null' EXIT
set +e
[ "$#" -gt 0 ] || set -- tests
"$CTS_VENV/bin/python" -m pytest -q -p no:cacheprovider --timeout 120 \
  --junitxml "$CTS_OUT/junit.xml" "$@" > "$CTS_OUT/pytest.log" 2>&1
set -e
tail -n 3 "$CTS_OUT/pytest.log"
"$CTS_VENV/bin/python" - "$CTS_OUT/junit.xml" <<'PY'
import sys
import xml.etree.ElementTree as ET
from datetime import date

suites = ET.parse(sys.argv[1]).getroot().iter("testsuite")
counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
for suite in suites:
    for key in counts:
        counts[key] += int(suite.get(key, 0))
passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
print(f"{date.today()}: {passed} passed, {counts['failures']} failed, {counts['errors']} errors, "
      f"{counts['skipped']} skipped of {counts['tests']}")
PY
