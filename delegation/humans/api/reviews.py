"""REST endpoints of the review queue: list, detail (humans.view_review), decide
(humans.change_review, as the admin's review form)."""

from __future__ import annotations

import uuid
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import ERRORS
from config.permissions import ModelPermissions
from delegation.humans.api.paging import DECIDE_ERRORS, NewestFirst, bad_filter
from delegation.humans.models import Review
from delegation.humans.reviews import review_decide
from delegation.humans.selectors import access_review, reviews_for
from delegation.humans.serializers import (
    ReviewDecisionSerializer,
    ReviewPageSerializer,
    ReviewSerializer,
)
from delegation.models import Run
from delegation.selectors import run_tree


def _trees(reviews: list[Any]) -> dict[Any, list[Run]]:
    return {review.run_id: run_tree(run=review.run) for review in reviews}


class ReviewListView(APIView):
    """The review queue (humans.view_review)."""

    permission_classes = [ModelPermissions]
    permission_model = Review

    @extend_schema(
        operation_id="reviews_list",
        parameters=[
            OpenApiParameter(
                "status", str, enum=["pending", "done", "all"], description="pending (default)."
            ),
            OpenApiParameter("agent", str, description="The flagged agent's name."),
            OpenApiParameter("cursor", str, description="From a page's next/previous link."),
        ],
        responses={200: ReviewPageSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Answers flagged `needs_review`, with question, tree, issue and citations."""
        reviews = reviews_for(user=request.user)
        wanted = request.query_params.get("status", "pending")
        if wanted == "pending":
            reviews = reviews.filter(status="pending")
        elif wanted == "done":
            reviews = reviews.exclude(status="pending")
        elif wanted != "all":
            raise bad_filter("status", "One of pending, done, all.")
        if request.query_params.get("agent"):
            reviews = reviews.filter(agent_name=request.query_params["agent"])
        paginator = NewestFirst()
        page = paginator.paginate_queryset(reviews, request, view=self)
        data = ReviewSerializer(page, many=True, context={"trees": _trees(page)}).data
        return paginator.get_paginated_response(data)


class ReviewDetailView(APIView):
    """One review (humans.view_review)."""

    permission_classes = [ModelPermissions]
    permission_model = Review

    @extend_schema(operation_id="reviews_retrieve", responses={200: ReviewSerializer, **ERRORS})
    def get(self, request: Request, review_id: uuid.UUID) -> Response:
        """The review with the turn's tree."""
        review = access_review(request.user, review_id)
        return Response(ReviewSerializer(review, context={"trees": _trees([review])}).data)


class ReviewDecisionView(APIView):
    """Mark a flagged answer (humans.change_review: a decision changes the review)."""

    permission_classes = [ModelPermissions]
    permission_model = Review
    permission_actions = {"POST": "change"}

    @extend_schema(
        operation_id="reviews_decide",
        request=ReviewDecisionSerializer,
        responses={200: ReviewSerializer, **DECIDE_ERRORS},
    )
    def post(self, request: Request, review_id: uuid.UUID) -> Response:
        """correct; wrong (with `note`); fixed (with `corrected_answer`, sent to the user's
        chat as a follow-up from "Reviewer"). 409 `already_decided` when reviewed already."""
        review = access_review(request.user, review_id)
        body = ReviewDecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        review = review_decide(review=review, user=request.user, **body.validated_data)
        return Response(ReviewSerializer(review, context={"trees": _trees([review])}).data)
