"""Dynamic routes and budgets (SPEC §17): pure compile, walk and budget arithmetic."""

from orca_cli.routing.routes.budget import (
    Spend,
    budget_refusal,
    budget_verdict,
    counter_key,
    spend_keys,
)
from orca_cli.routing.routes.facts import RequestFacts
from orca_cli.routing.routes.graph import (
    Decision,
    DenySpec,
    RouteTable,
    TargetSpec,
    compile_routes,
    split_bucket,
)
from orca_cli.routing.routes.keys import inbound_key_name

__all__ = [
    "Decision",
    "DenySpec",
    "RequestFacts",
    "RouteTable",
    "Spend",
    "TargetSpec",
    "budget_refusal",
    "budget_verdict",
    "compile_routes",
    "counter_key",
    "inbound_key_name",
    "spend_keys",
    "split_bucket",
]
