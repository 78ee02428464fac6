"""Numeric soundness checking of rules: :func:`check_rule` draws small graphs the rule
applies to, rewrites them and compares both with TVM."""

from .checker import Example, RuleCheck, Verdict, check_rule, check_rules, failed

__all__ = ["Example", "RuleCheck", "Verdict", "check_rule", "check_rules", "failed"]
