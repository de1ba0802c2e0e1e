"""Search and pagination of the console's lists: one query box (``q``, a case-insensitive
substring of any of the list's searchable fields) and pages of :data:`PAGE_SIZE` (``page``),
both kept in the address so that a list can be linked and reloaded as seen.

Searching happens in the database (``icontains`` over the given fields) before paging, so a
page only loads its own rows; links keep the other query parameters of the page.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from operator import or_
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Q, QuerySet
from django.http import HttpRequest

PAGE_SIZE = 25


@dataclass(frozen=True)
class Listing:
    page: Page
    query: str
    params: str  # the page's other query parameters, urlencoded, for the pager's links

    @property
    def rows(self) -> list[Any]:
        return list(self.page.object_list)

    @property
    def first_index(self) -> int:
        """Position (0-based) of this page's first row in the whole filtered list."""
        return self.page.start_index() - 1 if self.page.paginator.count else 0


def search(queryset: QuerySet, query: str, fields: list[str]) -> QuerySet:
    """Rows where any of ``fields`` contains ``query`` (case-insensitive); all rows if empty."""
    if not query:
        return queryset
    return queryset.filter(reduce(or_, (Q(**{f"{field}__icontains": query}) for field in fields)))


def listing(request: HttpRequest, queryset: QuerySet, fields: list[str],
            page_size: int = PAGE_SIZE) -> Listing:
    query = request.GET.get("q", "").strip()
    page = Paginator(search(queryset, query, fields), page_size).get_page(request.GET.get("page"))
    params = request.GET.copy()
    params.pop("page", None)
    return Listing(page, query, params.urlencode())
