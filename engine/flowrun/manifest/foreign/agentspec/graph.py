"""A Flow's control flow as flowrun's structured steps: the nodes in an order every control edge
respects, each with the condition under which it runs (the branches taken to reach it, as an
`if:`), and each cycle that a BranchingNode closes (a branch back to an earlier node) as a
`loop:` of the nodes on it, ended when that branch is not taken."""

from __future__ import annotations

from dataclasses import dataclass, field

NEXT = "next"


@dataclass
class Edge:
    source: str
    branch: str
    target: str
    where: tuple[str | int, ...]  # the edge's place in the file


@dataclass
class Loop:
    head: str  # the node the back edge returns to
    tail: str  # the BranchingNode whose branch goes back
    branch: str
    body: list[str] = field(default_factory=list)  # head ... tail, in order


@dataclass
class Plan:
    order: list[str]  # every reachable node once, loops' bodies included
    guards: dict[str, list[list[tuple[str, str]]]]  # node -> any of (all of (node, branch) taken)
    loops: list[Loop]
    problems: list[tuple[Edge, str]]


def plan(start: str, edges: list[Edge], branching: set[str]) -> Plan:
    """The order, conditions and loops of the graph of `edges` from `start`."""
    succ: dict[str, list[Edge]] = {}
    for edge in edges:
        succ.setdefault(edge.source, []).append(edge)
    back: list[Edge] = []
    post: list[str] = []
    stack: list[str] = []
    seen: set[str] = set()

    def visit(node: str) -> None:
        seen.add(node)
        stack.append(node)
        for edge in succ.get(node, []):
            if edge.target in stack:
                back.append(edge)
            elif edge.target not in seen:
                visit(edge.target)
        stack.pop()
        post.append(node)

    visit(start)
    order = list(reversed(post))
    loops, problems = _loops(back, order, branching)
    backs = {id(e) for e in back}
    forward = [e for e in edges if id(e) not in backs and e.source in seen]
    return Plan(order, _guards(order, forward, branching, start), loops, problems)


def _loops(
    back: list[Edge], order: list[str], branching: set[str]
) -> tuple[list[Loop], list[tuple[Edge, str]]]:
    loops: list[Loop] = []
    problems: list[tuple[Edge, str]] = []
    for edge in back:
        if edge.source not in branching:
            problems.append((edge, "a control edge back to an earlier node must leave a BranchingNode"))
            continue
        head, tail = order.index(edge.target), order.index(edge.source)
        body = order[head : tail + 1]
        if any(set(body) & set(other.body) for other in loops):
            problems.append((edge, "flowrun's loops do not overlap: this cycle shares nodes with another"))
            continue
        loops.append(Loop(edge.target, edge.source, edge.branch, body))
    return loops, problems


def _guards(
    order: list[str], forward: list[Edge], branching: set[str], start: str
) -> dict[str, list[list[tuple[str, str]]]]:
    """For each node, the ways to reach it: a list of paths, each the branches taken on it ([[]]
    for a node always reached)."""
    incoming: dict[str, list[Edge]] = {}
    for edge in forward:
        incoming.setdefault(edge.target, []).append(edge)
    guards: dict[str, list[list[tuple[str, str]]]] = {start: [[]]}
    for node in order:
        if node == start:
            continue
        ways: list[list[tuple[str, str]]] = []
        for edge in incoming.get(node, []):
            taken = [(edge.source, edge.branch)] if edge.source in branching else []
            for way in guards.get(edge.source, [[]]):
                ways.append([*way, *taken])
        guards[node] = _simplest(ways)
    return guards


def _simplest(ways: list[list[tuple[str, str]]]) -> list[list[tuple[str, str]]]:
    """`ways` without repeats; [[]] when one way needs no branch (always reached); the branches
    of one node that cover all its branches are left to the caller."""
    out: list[list[tuple[str, str]]] = []
    for way in ways:
        if not way:
            return [[]]
        if way not in out:
            out.append(way)
    return out or [[]]
