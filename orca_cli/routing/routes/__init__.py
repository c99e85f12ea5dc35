"""Dynamic routes and budgets (SPEC §17): pure compile, walk and budget arithmetic."""

from orca_cli.routing.routes.budget import (
    BudgetCheck,
    Spend,
    budget_refusal,
    budget_verdict,
    check_budgets,
    config_budget_counters,
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
    "BudgetCheck",
    "Decision",
    "DenySpec",
    "RequestFacts",
    "RouteTable",
    "Spend",
    "TargetSpec",
    "budget_refusal",
    "budget_verdict",
    "check_budgets",
    "compile_routes",
    "config_budget_counters",
    "counter_key",
    "inbound_key_name",
    "spend_keys",
    "split_bucket",
]
