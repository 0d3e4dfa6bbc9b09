"""The REST API of runs: list, inspect, start, signal, cancel, retry, wake, fork, query.

Views are thin: parse, check permission, call a service, render. Every error, ours or
DRF's, leaves as ``{"error": {"code", "message", "detail"}}``.
"""

import json
import uuid

from django.core.exceptions import PermissionDenied
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.generics import GenericAPIView
from rest_framework.metadata import SimpleMetadata
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import JSONParser
from rest_framework.permissions import AllowAny, BasePermission
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from durable import codec, selectors, services, validation
from durable.errors import (
    DurableError,
    InvalidFork,
    InvalidTransition,
    PayloadError,
    PayloadTooDeep,
    QueryFailed,
    QueryNotFound,
    RunConflict,
    RunFinished,
    RunNotFound,
    SignalConflict,
    UpdateFailed,
    UpdateNotFound,
    UpdateRejected,
    UpdateTimeout,
    WorkflowNotFound,
)
from durable.models import Signal, WorkflowRun
from durable.runtime.context import check_attribute_name
from durable.surfaces.audit import request_audit
from durable.surfaces.serializers import (
    ErrorSerializer,
    JournalEntrySerializer,
    QueryAnswerSerializer,
    RunCancelSerializer,
    RunDetailSerializer,
    RunFilterSerializer,
    RunForkSerializer,
    RunSerializer,
    RunStartSerializer,
    SignalSendSerializer,
    SignalSerializer,
    UpdateResultSerializer,
    UpdateSendSerializer,
)
from durable.surfaces.tokens import ApiTokenAuthentication, TokenScopeAllows

VIEW_PERMISSION = "durable.view_workflowrun"
OPERATE_PERMISSION = "durable.operate_workflowrun"

# The engine's named errors -> HTTP status and a stable machine-readable code.
ERRORS = {
    RunNotFound: (status.HTTP_404_NOT_FOUND, "run_not_found"),
    RunFinished: (status.HTTP_409_CONFLICT, "run_finished"),
    RunConflict: (status.HTTP_409_CONFLICT, "run_conflict"),
    SignalConflict: (status.HTTP_409_CONFLICT, "signal_conflict"),
    InvalidTransition: (status.HTTP_409_CONFLICT, "invalid_transition"),
    InvalidFork: (status.HTTP_409_CONFLICT, "invalid_fork"),
    QueryNotFound: (status.HTTP_404_NOT_FOUND, "query_not_found"),
    QueryFailed: (status.HTTP_422_UNPROCESSABLE_ENTITY, "query_failed"),
    UpdateNotFound: (status.HTTP_404_NOT_FOUND, "update_not_found"),
    UpdateRejected: (status.HTTP_422_UNPROCESSABLE_ENTITY, "update_rejected"),
    UpdateFailed: (status.HTTP_422_UNPROCESSABLE_ENTITY, "update_failed"),
    WorkflowNotFound: (status.HTTP_400_BAD_REQUEST, "workflow_not_found"),
    PayloadError: (status.HTTP_400_BAD_REQUEST, "payload_error"),
}


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "payload_too_large"
    default_detail = "The request body is too large."


def error_response(
    status_code: int, code: str, message: str, detail=None, headers=None
) -> Response:
    return Response(
        {"error": {"code": code, "message": message, "detail": detail}},
        status=status_code,
        headers=headers,
    )


def exception_handler(exc, context):
    """Turn engine errors and DRF's own errors into the one error shape; let bugs be 500s."""
    for error_type, (status_code, code) in ERRORS.items():
        if isinstance(exc, error_type):
            return error_response(status_code, code, str(exc))
    if isinstance(exc, DurableError):
        return error_response(status.HTTP_400_BAD_REQUEST, "durable_error", str(exc))
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        code, message, detail = "invalid", "The request is invalid.", response.data
    else:
        codes = exc.get_codes() if isinstance(exc, exceptions.APIException) else None
        code = codes if isinstance(codes, str) else getattr(exc, "default_code", "error")
        message, detail = str(getattr(exc, "detail", exc)), None
    headers = {key: value for key, value in response.items() if key.lower() != "content-type"}
    return error_response(response.status_code, code, message, detail, headers=headers)


class HasRunPermission(BasePermission):
    """Reading needs ``durable.view_workflowrun``; every write needs
    ``durable.operate_workflowrun``."""

    def has_permission(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return False
        needed = (
            VIEW_PERMISSION if request.method in ("GET", "HEAD", "OPTIONS") else OPERATE_PERMISSION
        )
        return request.user.has_perm(needed)


class RunPagination(PageNumberPagination):
    """A page size that is not a whole number in 1..500 is a 400, not silently the default."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            size = 0
        if not 1 <= size <= self.max_page_size:
            raise exceptions.ValidationError(
                {self.page_size_query_param: [f"A whole number from 1 to {self.max_page_size}."]}
            )
        return size

    def get_page_number(self, request, paginator):
        # DRF reads an empty ?page= as page 1; the schema says a page is a whole number.
        if request.query_params.get(self.page_query_param) == "":
            raise exceptions.ValidationError({self.page_query_param: ["A whole number from 1."]})
        return super().get_page_number(request, paginator)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"]["maximum"] = self.max_page_size
        return parameters


def errors(*codes: int) -> dict:
    descriptions = {
        400: "Invalid input (unknown workflow, bad JSON, a value that cannot be stored).",
        401: "No or invalid credentials.",
        403: "Authenticated, but lacking the permission for this action.",
        404: "No such run (or page), or no such query registered by the run.",
        409: "The run's state does not allow this (finished, conflicting start, wrong status), or "
        "a signal's dedupe key names another signal or a prefix reserved by an app.",
        413: "The body is larger than DURABLE_API_MAX_PAYLOAD_BYTES.",
        415: "The body is not application/json.",
        422: "The query could not be answered: its handler raised, or the run no longer replays "
        "on the current code.",
    }
    return {
        code: OpenApiResponse(ErrorSerializer, description=descriptions[code]) for code in codes
    }


def clean_run_id(run_id: str) -> str:
    """A run id that no run can have is simply not found (and never reaches the database)."""
    try:
        validation.check_text(run_id, what="run id")
    except PayloadError:
        raise RunNotFound(f"no run with id {run_id!r}") from None
    if len(run_id) > 255:
        raise RunNotFound("no run with an id that long")
    return run_id


ATTRIBUTE_PARAM = "attr."


def refuse_unknown_parameters(params, *, known: set[str]) -> None:
    """A query parameter the list does not know is a 400 naming it: a misspelt filter
    (``?stauts=failed``) must not silently list every run."""
    unknown = sorted(
        name for name in params if name not in known and not name.startswith(ATTRIBUTE_PARAM)
    )
    if unknown:
        raise exceptions.ValidationError({name: ["Unknown query parameter."] for name in unknown})


def attribute_filters(params) -> list[tuple[str, str]]:
    """``attr.<name>=<value>`` query parameters as (name, value) pairs; a name that no
    attribute can have, or a value that cannot be stored, is a 400 naming the parameter."""
    pairs = []
    for param in params:
        if not param.startswith(ATTRIBUTE_PARAM):
            continue
        name = param[len(ATTRIBUTE_PARAM) :]
        try:
            check_attribute_name(name)
        except ValueError as error:
            raise exceptions.ValidationError({param: [str(error)]}) from None
        for value in params.getlist(param):
            try:
                validation.check_text(value, what=param)
            except DurableError as error:
                raise exceptions.ValidationError({param: [str(error)]}) from None
            pairs.append((name, value))
    return pairs


def run_detail(run_id: str) -> dict:
    run = (
        WorkflowRun.objects.prefetch_related("journal", "signals")
        .filter(pk=clean_run_id(run_id))
        .first()
    )
    if run is None:  # an archived run reads back from the archive, read-only
        return archived_detail(clean_run_id(run_id))
    return RunDetailSerializer(run).data


class DepthLimitedJSONParser(JSONParser):
    """JSON whose nesting would exhaust Python's recursion is a payload_error, not a 500."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise PayloadTooDeep("the body is nested too deep to parse") from None


class RunMetadata(SimpleMetadata):
    """OPTIONS: describe the request body only where an action has one (retry and wake have
    none)."""

    def determine_actions(self, request, view):
        if getattr(view, "serializer_class", None) is None:
            return {}
        return super().determine_actions(request, view)


class DurableAPIView(GenericAPIView):
    authentication_classes = [ApiTokenAuthentication, SessionAuthentication]
    permission_classes = [HasRunPermission]
    renderer_classes = [JSONRenderer]
    parser_classes = [DepthLimitedJSONParser]
    metadata_class = RunMetadata
    pagination_class = None

    def get_exception_handler(self):
        return exception_handler

    def get_permissions(self):
        # A subclass names its own permissions (schedules, invoices); a read token stays read-only
        # in each.
        return [TokenScopeAllows(), *super().get_permissions()]

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        # A schedule's name, an invoice's number: one no row can hold names nothing, and is never
        # asked for (PostgreSQL refuses a NUL in a query). A run id gets its own 404 (clean_run_id).
        for part, value in kwargs.items():
            if part != "run_id" and isinstance(value, str) and "\x00" in value:
                raise exceptions.NotFound(f"no {part.replace('_', ' ')} contains a NUL character")
        if request.method == "POST":
            limit = validation.max_payload_bytes()
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > limit:
                raise PayloadTooLarge(
                    f"The request body is {length} bytes; the limit is {limit} bytes."
                )

    def audit(self) -> dict:
        actor, detail = request_audit(self.request, via="api")
        return {"actor": actor, "audit": detail}


class RunCollectionView(DurableAPIView):
    serializer_class = RunSerializer
    pagination_class = RunPagination

    @extend_schema(
        operation_id="runs_list",
        parameters=[
            RunFilterSerializer,
            OpenApiParameter(
                "attr.stage",
                {"type": "string", "pattern": r"^[^\x00]*$"},
                OpenApiParameter.QUERY,
                required=False,
                description=(
                    "Filter on a search attribute: any `attr.<name>=<value>` (here `stage`) "
                    "keeps runs whose attribute `<name>`, written as a JSON scalar, is "
                    '`<value>` (`attr.n=42` matches 42 and "42", `attr.ok=true` matches '
                    "true). Several combine with AND."
                ),
            ),
        ],
        responses={200: RunSerializer(many=True), **errors(400, 401, 403, 404)},
        summary=(
            "List runs, newest first, filtered by status, workflow, version and search attributes."
        ),
    )
    def get(self, request):
        refuse_unknown_parameters(
            request.query_params,
            known={*RunFilterSerializer().fields, "page", RunPagination.page_size_query_param},
        )
        filters = RunFilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        run_filter = selectors.RunFilter(
            **filters.validated_data, attributes=tuple(attribute_filters(request.query_params))
        )
        runs = selectors.runs_filtered(run_filter).order_by("-created_at", "id")
        page = self.paginate_queryset(runs)
        return self.get_paginated_response(RunSerializer(page, many=True).data)

    @extend_schema(
        operation_id="runs_start",
        request=RunStartSerializer,
        responses={201: RunSerializer, 200: RunSerializer, **errors(400, 401, 403, 409, 413, 415)},
        summary="Start a run (201), or return the existing run with this id and input (200).",
    )
    def post(self, request):
        start = RunStartSerializer(data=request.data)
        start.is_valid(raise_exception=True)
        data = start.validated_data
        validation.check_run_input(data["workflow"], data["args"], data["kwargs"])
        existed = bool(data.get("id")) and WorkflowRun.objects.filter(pk=data["id"]).exists()
        run = services.run_start(
            data["workflow"],
            *data["args"],
            id=data.get("id"),
            priority=data["priority"],
            **self.audit(),
            **data["kwargs"],
        )
        return Response(
            RunSerializer(run).data,
            status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED,
        )


class RunDetailView(DurableAPIView):
    serializer_class = RunDetailSerializer

    @extend_schema(
        operation_id="runs_retrieve",
        responses={200: RunDetailSerializer, **errors(401, 403, 404)},
        summary="A run with its journal (the timeline) and its signals.",
    )
    def get(self, request, run_id):
        return Response(run_detail(run_id))


class RunActionView(DurableAPIView):
    # POST performs the action. A GET here is a detail request for a run whose id ends in
    # "/<action>" (ids may contain slashes), so every id stays readable.

    suffix = ""

    @extend_schema(exclude=True)
    def get(self, request, run_id):
        return Response(run_detail(f"{run_id}/{self.suffix}"))


class RunSignalView(RunActionView):
    suffix = "signals"
    serializer_class = SignalSerializer

    @extend_schema(
        operation_id="runs_signal",
        request=SignalSendSerializer,
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                required=False,
                description="The signal's dedupe key: a second request with the same key, name and "
                "payload is the same signal (200) and does not resume the run again; the "
                "same key with another name or payload, or a key under a prefix an app "
                "reserved (e.g. approval:), is a 409 signal_conflict.",
            )
        ],
        responses={
            201: SignalSerializer,
            200: SignalSerializer,
            **errors(400, 401, 403, 404, 409, 413, 415),
        },
        summary="Send a signal to a run (201), or return the one already sent with this key (200).",
    )
    def post(self, request, run_id):
        run_id = clean_run_id(run_id)
        body = SignalSendSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        dedupe_key = request.headers.get("Idempotency-Key") or None
        if dedupe_key is not None:
            if len(dedupe_key) > 255:
                raise exceptions.ValidationError({"Idempotency-Key": ["At most 255 characters."]})
            validation.check_text(dedupe_key, what="Idempotency-Key")
        seen = (
            bool(dedupe_key)
            and Signal.objects.filter(run_id=run_id, dedupe_key=dedupe_key).exists()
        )
        signal = services.signal_send(
            run_id,
            body.validated_data["name"],
            body.validated_data["payload"],
            dedupe_key=dedupe_key,
            **self.audit(),
        )
        return Response(
            SignalSerializer(signal).data,
            status=status.HTTP_200_OK if seen else status.HTTP_201_CREATED,
        )


class RunCancelView(RunActionView):
    suffix = "cancel"
    serializer_class = RunCancelSerializer

    @extend_schema(
        operation_id="runs_cancel",
        request=RunCancelSerializer,
        responses={200: RunSerializer, **errors(400, 401, 403, 404, 409, 413, 415)},
        summary="Cancel a run now (a worker running it is stopped at its next write), "
        "or gracefully.",
    )
    def post(self, request, run_id):
        body = RunCancelSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        run = services.run_cancel(
            clean_run_id(run_id),
            reason=body.validated_data["reason"],
            graceful=body.validated_data["graceful"],
            **self.audit(),
        )
        return Response(RunSerializer(run).data)


class RunRetryView(RunActionView):
    suffix = "retry"

    @extend_schema(
        operation_id="runs_retry",
        request=None,
        responses={200: RunSerializer, **errors(401, 403, 404, 409, 413)},
        summary="Send a failed or blocked run back to pending (replays on current code).",
    )
    def post(self, request, run_id):
        run = services.run_retry(clean_run_id(run_id), **self.audit())
        return Response(RunSerializer(run).data)


class RunWakeView(RunActionView):
    suffix = "wake"

    @extend_schema(
        operation_id="runs_wake",
        request=None,
        responses={200: RunSerializer, **errors(401, 403, 404, 409, 413)},
        summary="End a sleep or a retry back-off now (never times out a wait for a signal).",
    )
    def post(self, request, run_id):
        run = services.run_wake(clean_run_id(run_id), **self.audit())
        return Response(RunSerializer(run).data)


class RunForkView(RunActionView):
    suffix = "fork"
    serializer_class = RunForkSerializer

    @extend_schema(
        operation_id="runs_fork",
        request=RunForkSerializer,
        responses={
            201: RunSerializer,
            200: RunSerializer,
            **errors(400, 401, 403, 404, 409, 413, 415),
        },
        summary="Fork a run at a journal position (201): a new run with the same input keeps "
        "the entries before it and runs the current code from there; the run itself "
        "is not changed. The same id, run and position again returns that fork (200).",
    )
    def post(self, request, run_id):
        body = RunForkSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        fork_id = body.validated_data.get("id")
        existed = bool(fork_id) and WorkflowRun.objects.filter(pk=fork_id).exists()
        fork = services.run_fork(
            clean_run_id(run_id),
            at_position=body.validated_data["at_position"],
            id=fork_id,
            **self.audit(),
        )
        return Response(
            RunSerializer(fork).data,
            status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED,
        )


class RunUpdateView(DurableAPIView):
    serializer_class = UpdateSendSerializer

    @extend_schema(
        operation_id="runs_update",
        request=UpdateSendSerializer,
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                required=False,
                description=(
                    "The update's dedupe key: the same key is the same "
                    "update, applied once; asked again, it answers the result."
                ),
            )
        ],
        responses={
            200: UpdateResultSerializer,
            202: UpdateResultSerializer,
            **errors(400, 401, 403, 404, 409, 413, 415, 422),
        },
        summary=(
            "Ask a running workflow to apply an update (workflow.on_update): 200 with its "
            "result, 422 with the validator's reason (nothing stored) or the handler's "
            "error, 202 when it is stored and not applied within the timeout (it will be)."
        ),
    )
    def post(self, request, run_id, name):
        body = UpdateSendSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        dedupe_key = request.headers.get("Idempotency-Key") or uuid.uuid4().hex
        if len(dedupe_key) > 240:
            raise exceptions.ValidationError({"Idempotency-Key": ["At most 240 characters."]})
        validation.check_text(dedupe_key, what="Idempotency-Key")
        try:
            value = services.run_update(
                clean_run_id(run_id),
                name,
                body.validated_data["payload"],
                timeout=body.validated_data["timeout"],
                dedupe_key=dedupe_key,
                **self.audit(),
            )
        except UpdateTimeout as stored:
            return Response(
                {"update_id": stored.update_id, "status": "stored", "result": None},
                status=status.HTTP_202_ACCEPTED,
            )
        return Response(
            {"update_id": dedupe_key, "status": "applied", "result": codec.encode(value)}
        )


class RunQueryView(DurableAPIView):
    serializer_class = QueryAnswerSerializer

    @extend_schema(
        operation_id="runs_query",
        parameters=[
            OpenApiParameter(
                "arg",
                {"type": "array", "items": {"type": "string", "pattern": r"^[^\x00]*$"}},
                OpenApiParameter.QUERY,
                required=False,
                explode=True,
                style="form",
                description="The handler's arguments in order, one `arg` each: JSON when it parses "
                '(`arg=3`, `arg=true`, `arg={"a":1}`), else the text itself (`arg=pt-BR`).',
            )
        ],
        responses={200: QueryAnswerSerializer, **errors(400, 401, 403, 404, 422)},
        summary=(
            "Answer a query the workflow registered (workflow.on_query): the run is "
            "replayed from its journal, nothing runs and nothing is written; 422 if "
            "the handler raised or the run no longer replays on the current code."
        ),
    )
    def get(self, request, run_id, name):
        refuse_unknown_parameters(request.query_params, known={"arg"})
        args = query_args(request.query_params.getlist("arg"))
        try:
            value = services.run_query(clean_run_id(run_id), name, *args)
        except RunNotFound:  # a run whose id ends in "/queries/<name>" is still readable
            return Response(run_detail(f"{run_id}/queries/{name}"))
        try:
            encoded = codec.encode(value)
        except PayloadError as error:
            raise QueryFailed(
                f"query {name!r} answered a value JSON cannot hold: {error}"
            ) from None
        return Response({"query": name, "result": encoded})


def query_args(raw: list[str]) -> list:
    """Each ``arg`` as JSON when it parses, else as the text (as the CLI reads its arguments)."""
    args = []
    for text in raw:
        try:
            args.append(json.loads(text))
        except ValueError:
            args.append(text)
    try:
        return validation.check_json_value(args, what="arg")
    except DurableError as error:
        raise exceptions.ValidationError({"arg": [str(error)]}) from None


class NotFoundView(APIView):
    """Any other path under /api/: a JSON 404 rather than an HTML page."""

    schema = None
    authentication_classes = []
    permission_classes = [AllowAny]
    renderer_classes = [JSONRenderer]

    def get_exception_handler(self):
        return exception_handler

    def initial(self, request, *args, **kwargs):
        raise exceptions.NotFound()


def archived_detail(run_id: str) -> dict:
    """The API's run detail for an archived run, plus where it went."""
    run = selectors.archived_run_full(selectors.archived_get(run_id))
    return {
        **RunSerializer(run).data,
        "journal": JournalEntrySerializer(selectors.archived_journal(run), many=True).data,
        "signals": SignalSerializer(selectors.archived_signals(run), many=True).data,
        "archived": {
            "archived_at": run.archived_at.isoformat(),
            "batch": run.batch.token,
            "export_file": run.batch.export_file or None,
        },
    }
