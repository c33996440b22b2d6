"""Usage and cost: a dated price table, a ledger of every model call, money budgets, reports."""
