"""``GET /api/compare?base=&base_host=&cand=&cand_host=[&steps=all]``: the diff of two runs
(or two hosts of one run) for the Compare page, as `stepscope diff --json` gives it (without
rules): after a warm-up, the steps once warm; ``steps=all`` compares every step.

Hosts default to each run's default host (ALL_HOSTS when it has several). The summaries come
from the shared per-(run, host) intermediates, so comparing runs already shown is quick.
"""

from __future__ import annotations

from stepscope.serve.http import ApiRequest, ApiResponse, Handler, json_response
from stepscope.serve.security import BadRequestError, check_host
from stepscope.serve.state import ServerState
from stepscope.stats.compare import diff_runs
from stepscope.stats.compare.diff_output import diff_output
from stepscope.tools import output


def compare_handler(state: ServerState) -> Handler:
    def handle(request: ApiRequest) -> ApiResponse:
        query = request.query
        names = {k: query.get(k, "") for k in ("base", "cand")}
        missing = [k for k, v in names.items() if not v]
        if missing:
            raise BadRequestError(
                f"compare needs two runs: give {' and '.join(missing)} (run names from /api/runs)"
            )
        sides = []
        for key in ("base", "cand"):
            run = state.run(names[key])
            host = check_host(run, query.get(f"{key}_host") or state.default_host(run))
            state.fingerprint(run, host)  # notices changed files (drops stale profiles)
            sides.append(state.analysis(run).summary(host))
        steps = query.get("steps", "")
        if steps not in ("", "all", "once_warm"):
            raise BadRequestError(f"steps={steps!r}: give 'all' or 'once_warm' (the default)")
        diff = diff_runs(sides[0], sides[1], once_warm=steps != "all")
        data = output.to_json(diff_output(diff))
        return json_response(data, headers={"Cache-Control": "no-cache"})

    return handle
