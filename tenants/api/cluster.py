"""Operators' cluster endpoints: partition reassignments, preferred-leader elections, and
read-only views of what Kafka clients made on the cluster (SCRAM users, ACL rules).

Requests are validated against ZooKeeper as it is now (topic, partition, registered brokers), so
ZooKeeper being unreachable answers 503 rather than accepting a move that cannot be checked.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response

from .. import acl_sync, scram_users, services
from ..models import Reassignment
from ..reassignment import MoveConflict
from ..reassignments import ClusterFacts, partition_state, read_facts
from ..zookeeper import client
from . import serializers as s
from .access import IsOperator, call_service

ZOOKEEPER_ERRORS = (KazooException, KazooTimeoutError)


class ZooKeeperUnavailable(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "ZooKeeper is unreachable; try again"


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT


def _facts(topics: list[str]) -> ClusterFacts:
    try:
        return read_facts(client(), topics)
    except ZOOKEEPER_ERRORS as exc:
        raise ZooKeeperUnavailable() from exc


class ReassignmentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Partition reassignments (operators only): create one to move a partition's replicas;
    the controller does the move and the control plane tracks it to ``complete``."""

    serializer_class = s.ReassignmentSerializer
    permission_classes = [IsOperator]
    queryset = Reassignment.objects.select_related("created_by")

    @extend_schema(request=s.ReassignmentCreateSerializer, responses={
        201: s.ReassignmentSerializer, 409: OpenApiResponse(description="the partition is already moving")})
    def create(self, request: Request) -> Response:
        serializer = s.ReassignmentCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            move = call_service(services.create_reassignment, request.user, _facts([data["topic"]]), **data)
        except MoveConflict as exc:
            raise Conflict(str(exc)) from exc
        return Response(self.get_serializer(move).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses=s.ReassignmentDetailSerializer)
    def retrieve(self, request: Request, pk: str) -> Response:
        """One reassignment with the partition's live replicas, adding/removing, ISR and leader."""
        move = self.get_object()
        try:
            move.live = partition_state(client(), move.topic, move.partition)  # type: ignore[attr-defined]
        except ZOOKEEPER_ERRORS:
            move.live = None  # type: ignore[attr-defined]
        return Response(s.ReassignmentDetailSerializer(move).data)


class PreferredElectionViewSet(viewsets.GenericViewSet):
    """Ask the controller to move leadership back to each partition's preferred (first) replica."""

    serializer_class = s.PreferredElectionSerializer
    permission_classes = [IsOperator]

    @extend_schema(responses={202: s.PreferredElectionSerializer})
    def create(self, request: Request) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        partitions = [(p["topic"], p["partition"]) for p in serializer.validated_data["partitions"]]
        call_service(services.request_preferred_election, request.user,
                     _facts([t for t, _ in partitions]), partitions)
        return Response(serializer.data, status=status.HTTP_202_ACCEPTED)


class ScramUserViewSet(viewsets.ViewSet):
    """SCRAM users made over Kafka (AlterUserScramCredentials; operators only, read-only):
    operator principals that log in with the credentials an operator's tool set."""

    permission_classes = [IsOperator]

    @extend_schema(responses=s.ScramUserSerializer(many=True))
    def list(self, request: Request) -> Response:
        try:
            users = scram_users.scram_users(client())
        except ZOOKEEPER_ERRORS as exc:
            raise ZooKeeperUnavailable() from exc
        return Response(s.ScramUserSerializer(users, many=True).data)


class ClusterAclViewSet(viewsets.ViewSet):
    """Every ACL rule the brokers enforce (operators only, read-only), including rules made
    over Kafka for principals or resources of no tenant; ``managed`` rules are also a
    tenant's ACL rows (``/api/v1/tenants/<slug>/acls/``)."""

    permission_classes = [IsOperator]

    @extend_schema(responses=s.ClusterAclSerializer(many=True))
    def list(self, request: Request) -> Response:
        try:
            rules = acl_sync.cluster_rules(client())
        except ZOOKEEPER_ERRORS as exc:
            raise ZooKeeperUnavailable() from exc
        return Response(s.ClusterAclSerializer(rules, many=True).data)
