"""User policies: rule-based ABM, LLM (policies.llm), learned (SB3) and hybrid routing of users to them.

A policy maps the users it is given to actions each step; see policies/base.py for the contract.
"""
