"""Structural selectors in a heading tree: what ``a>b``, ``>a`` and ``a@2``
name, and the one selector proposed for every heading.

A step names a heading by its slug; ``/`` before it says an earlier step's
heading encloses it at any depth, ``>`` directly; a leading ``>`` says no
heading encloses the first step's; ``@N`` says it is the N-th of its
siblings (the headings with its parent, or with none) that have its slug.
A step without an ordinal reads ``base-N`` as today's ``a/b`` does (also as
GitHub's position number for a repeated ``base``); one with an ordinal reads
its slug literally, the position being given.

The proposal prefers what no edit elsewhere moves: the qualified ``a/b``
(``Tree.qualified``), then enclosing headings with ``>`` and the top-level
mark, and only where siblings share the slug and every enclosing heading
(nothing else about the structure tells them apart) an ordinal.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator, Sequence

from governance.core.locator import Step
from governance.core.tree import Match, Tree

# No heading is enclosed by more than five (levels are 1 to 6): a selector
# of more steps names nothing.
_MOST_STEPS = 6

# A qualification over a heading's enclosing slugs: (slug, child) pairs,
# outermost first, then whether the heading itself is a direct child of the
# last of them (or, with none, encloses nothing above it).
_Shape = tuple[tuple[tuple[str, bool], ...], bool]


def _step_fits(tree: Tree, step: Step, index: int, *, literal: bool) -> bool:
    slug = tree.headings[index].slug
    if step.ordinal is not None:
        return slug == step.slug and tree.ordinals[index] == step.ordinal
    return slug == step.slug or (not literal and slug in tree.meanings(step.slug))


def _placed(
    tree: Tree, nodes: Sequence[int], steps: Sequence[Step], at: int, *, literal: bool
) -> bool:
    # steps[-1] fits nodes[at]; place the ones before it farther out.
    *before, step = steps
    if not before:
        return not step.child or at == len(nodes) - 1
    farther = range(at + 1, at + 2 if step.child else len(nodes))
    return any(
        _step_fits(tree, before[-1], nodes[j], literal=literal)
        and _placed(tree, nodes, before, j, literal=literal)
        for j in farther
        if j < len(nodes)
    )


def fits(tree: Tree, index: int, steps: Sequence[Step], *, literal: bool) -> bool:
    """Heading ``index`` is one ``steps`` can mean (``literal``: reading every
    slug as itself, never as a position number)."""
    if not _step_fits(tree, steps[-1], index, literal=literal):
        return False
    nodes = [index, *tree.ancestors(index)]
    return _placed(tree, nodes, steps, 0, literal=literal)


def match_steps(tree: Tree, steps: Sequence[Step]) -> Match:
    """What a structural selector means in ``tree``, as ``Tree.match`` for ``a/b``."""
    own = steps[-1]
    positional = any(s.ordinal is None and tree.repeat_of(s.slug) is not None for s in steps)
    if len(steps) > _MOST_STEPS:
        return Match((), None, positional)
    group = tree.group(own.slug) if own.ordinal is None else tree.by_slug.get(own.slug, [])
    candidates = tuple(i for i in group if fits(tree, i, steps, literal=False))
    named = None
    if len(candidates) == 1 and fits(tree, candidates[0], steps, literal=True):
        named = candidates[0]
    return Match(candidates, named, positional)


def render(steps: Sequence[Step]) -> str:
    """The fragment of ``steps``: ``a/b`` where no step is structural."""
    parts = []
    for position, step in enumerate(steps):
        if position:
            parts.append(">" if step.child else "/")
        elif step.child:
            parts.append(">")
        parts.append(step.slug if step.ordinal is None else f"{step.slug}@{step.ordinal}")
    return "".join(parts)


def propose(tree: Tree, index: int) -> tuple[Step, ...]:
    """The selector naming heading ``index`` alone, position-independent
    wherever the structure allows (remembered per tree)."""
    key = ("proposed", index)
    found = tree.memo.get(key)
    if found is None:
        found = tree.memo[key] = _propose(tree, index)
    assert isinstance(found, tuple)
    return found


def _propose(tree: Tree, index: int) -> tuple[Step, ...]:
    own = tree.headings[index].slug
    if own:
        qualified = tree.qualified(index)
        if qualified is not None and "" not in qualified:
            return tuple(Step(slug) for slug in qualified)
        shape = _unique_shape(tree, index, own, None)
        if shape is not None:
            return _steps(shape, Step(own))
    # Siblings alike in every enclosing heading: the ordinal says which.
    ordinal = tree.ordinals[index]
    shape = _unique_shape(tree, index, own, ordinal)
    if shape is not None:
        return _steps(shape, Step(own, ordinal))
    # Through the parent's own selector, which names it alone: its children
    # of this slug are the siblings the ordinal counts.
    parent = tree.parent[index]
    assert parent is not None  # a top-level heading's ordinal counts every such heading
    return (*propose(tree, parent), Step(own, ordinal, child=True))


def _steps(shape: _Shape, own: Step) -> tuple[Step, ...]:
    outer, child = shape
    return (*(Step(slug, None, flag) for slug, flag in outer), Step(own.slug, own.ordinal, child))


_Rank = tuple[int, int, tuple[int, ...], tuple[bool, ...]]


def _shapes(tree: Tree, chain: tuple[str, ...]) -> Iterator[tuple[_Rank, _Shape]]:
    # Every qualification a heading with enclosing slugs ``chain`` (nearest
    # first) satisfies, with a preference key (each distinct): fewer
    # headings, fewer marks, nearer headings, nearer marks. An empty slug
    # is no step without an ordinal: never used.
    usable = [j for j, slug in enumerate(chain) if slug]
    outermost = len(chain) - 1
    for size in range(len(usable) + 1):
        for picked in itertools.combinations(usable, size):
            outward = list(reversed(picked))  # outermost first
            # Which marks are possible: a leading ">" on the outermost when
            # it is the top of the chain; ">" between adjacent ones; and
            # the heading's own against the nearest (or the top, with none).
            options: list[tuple[bool, ...]] = []
            for position, j in enumerate(outward):
                if position == 0:
                    options.append((False, True) if j == outermost else (False,))
                else:
                    options.append((False, True) if outward[position - 1] == j + 1 else (False,))
            nearest = picked[0] if picked else None
            direct = nearest == 0 or (nearest is None and not chain)
            options.append((False, True) if direct else (False,))
            for marks in itertools.product(*options):
                outer = tuple((chain[j], mark) for j, mark in zip(outward, marks, strict=False))
                # Marks nearer the heading first: `a>b` before `>a/b`.
                nearer = tuple(not mark for mark in reversed(marks))
                yield (size, sum(marks), picked, nearer), (outer, marks[-1])


def _chain(tree: Tree, index: int) -> tuple[str, ...]:
    return tuple(tree.headings[a].slug for a in tree.ancestors(index))


def _ordinal_groups(tree: Tree) -> dict[tuple[str, int], list[int]]:
    # The headings of each slug and ordinal, grouped once a tree.
    groups = tree.memo.get("ordinal groups")
    if groups is None:
        found: dict[tuple[str, int], list[int]] = {}
        for i, heading in enumerate(tree.headings):
            found.setdefault((heading.slug, tree.ordinals[i]), []).append(i)
        groups = tree.memo["ordinal groups"] = found
    assert isinstance(groups, dict)
    return groups


def _alike(tree: Tree, slug: str, ordinal: int | None) -> list[int]:
    # The headings a step of this slug can mean (with its base, where it can
    # be a position number), or those of the slug with one ordinal.
    return tree.group(slug) if ordinal is None else _ordinal_groups(tree)[(slug, ordinal)]


def _unique_shape(tree: Tree, index: int, slug: str, ordinal: int | None) -> _Shape | None:
    # The preferred qualification that heading ``index`` satisfies and no
    # other heading of its slug (and ordinal, when given) does. Headings
    # with the same enclosing slugs satisfy the same ones, so each distinct
    # chain is counted once, with its number, once a tree.
    if ordinal is None:
        single = tree.repeat_of(slug) is None and len(tree.by_slug[slug]) == 1
    else:
        single = len(_ordinal_groups(tree)[(slug, ordinal)]) == 1
    if single:
        return ((), False)  # its slug (and ordinal) alone
    key = ("shapes", slug, ordinal)
    known = tree.memo.get(key)
    if known is None:
        chains = Counter(_chain(tree, i) for i in _alike(tree, slug, ordinal))
        counts: Counter[_Shape] = Counter()
        for chain, number in chains.items():
            counts.update({shape: number for _, shape in _shapes(tree, chain)})
        known = tree.memo[key] = (chains, counts)
    assert isinstance(known, tuple)
    chains, counts = known
    mine = _chain(tree, index)
    if chains[mine] > 1:
        return None  # a twin satisfies every qualification it does
    own = list(_shapes(tree, mine))
    satisfied = {shape for _, shape in own}

    def alone(shape: _Shape) -> bool:
        # Each literal reading of its slugs (``base-N`` may mean ``base``)
        # is satisfied by this heading alone, or by none.
        outer, child = shape
        readings = itertools.product(*(tree.meanings(slug) for slug, _ in outer))
        for slugs in readings:
            reading = (tuple(zip(slugs, (mark for _, mark in outer), strict=True)), child)
            if counts[reading] != (1 if reading in satisfied else 0):
                return False
        return True

    best = min(
        ((rank, shape) for rank, shape in own if alone(shape)),
        default=None,
        key=lambda item: item[0],
    )
    return None if best is None else best[1]
