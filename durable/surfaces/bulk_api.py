"""The REST API of bulk operations: preview (dry run) or do a retry, wake or cancel by filter.

Thin: parse the filter as the run list does, call ``durable.features.bulk``, render.
"""

from django.utils.datastructures import MultiValueDict
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema, extend_schema_field
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response

from durable import conf
from durable.features import bulk
from durable.models import RunStatus
from durable.selectors import RunFilter
from durable.surfaces.api import DurableAPIView, attribute_filters, errors
from durable.surfaces.serializers import JSONBoolean, JSONText, RunFilterSerializer, StorableText

FILTER_FIELDS = ("status", "workflow", "version")


class BulkRefused(exceptions.APIException):
    """A bulk operation refused as asked (too many runs, no filter, a bad token): a 400."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "bulk_refused"

    def __init__(self, error: bulk.BulkError):
        code = {
            bulk.BulkTooLarge: "bulk_too_large",
            bulk.BulkTokenInvalid: "bulk_token_invalid",
            bulk.BulkFilterMissing: "bulk_filter_missing",
        }.get(type(error), self.default_code)
        super().__init__(str(error), code)


@extend_schema_field(
    {
        "type": "object",
        "minProperties": 1,
        "description": "The run list's filters: `status`, `workflow`, `version`, and any "
        "`attr.<name>` (a search attribute written as a JSON scalar, as in "
        "`GET /api/runs/?attr.<name>=`). All combine with AND.",
        "properties": {
            "status": {"type": "string", "enum": [value for value, _ in RunStatus.choices]},
            "workflow": {"type": "string", "maxLength": 200, "pattern": r"^[^\x00]*$"},
            "version": {"type": "integer", "minimum": 1, "maximum": 2**31 - 1},
        },
        "additionalProperties": {"type": "string", "pattern": r"^[^\x00]*$"},
        "example": {"status": "blocked", "workflow": "onboarding", "version": 3},
    }
)
class RunFilterField(serializers.Field):
    """A JSON object of the run list's query parameters, parsed into a ``RunFilter``."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError('A JSON object such as {"status": "blocked"}.')
        unknown = sorted(
            name for name in data if name not in FILTER_FIELDS and not name.startswith("attr.")
        )
        if unknown:
            raise serializers.ValidationError(
                f"Unknown filter {', '.join(map(repr, unknown))}: "
                "use status, workflow, version or attr.<name>."
            )
        # JSON types as the schema says (the list's query strings have none): 1 is no workflow name.
        mistyped = {
            name: ["A string."]
            for name in ("status", "workflow")
            if name in data and not isinstance(data[name], str)
        }
        if "version" in data and (
            not isinstance(data["version"], int) or isinstance(data["version"], bool)
        ):
            mistyped["version"] = ["A whole number."]
        if mistyped:
            raise serializers.ValidationError(mistyped)
        fields = RunFilterSerializer(
            data={name: data[name] for name in FILTER_FIELDS if name in data}
        )
        if not fields.is_valid():
            raise serializers.ValidationError(fields.errors)
        texts = {name: value for name, value in data.items() if name.startswith("attr.")}
        wrong = sorted(name for name, value in texts.items() if not isinstance(value, str))
        if wrong:
            raise serializers.ValidationError(
                {name: ["A string (the value as the run list takes it)."] for name in wrong}
            )
        try:
            attributes = attribute_filters(
                MultiValueDict({name: [value] for name, value in texts.items()})
            )
        except exceptions.ValidationError as error:
            raise serializers.ValidationError(error.detail) from None
        run_filter = RunFilter(**fields.validated_data, attributes=tuple(attributes))
        if run_filter.is_empty():
            raise serializers.ValidationError(
                "At least one filter: a bulk operation never acts on every run."
            )
        return run_filter

    def to_representation(self, value):
        return value.as_params()


class BulkRequestSerializer(serializers.Serializer):
    action = serializers.ChoiceField(
        choices=bulk.ACTIONS,
        help_text="retry (failed or blocked runs), wake (pending or waiting "
        "runs: sleeps and back-offs end now), cancel.",
    )
    filter = RunFilterField()
    reason = JSONText(
        required=False,
        allow_blank=True,
        default="",
        max_length=1000,
        validators=[StorableText("reason")],
        help_text="For cancel: the reason recorded.",
    )
    graceful = JSONBoolean(
        required=False, default=False, help_text="For cancel: let each workflow clean up first."
    )
    dry_run = JSONBoolean(
        required=False,
        default=False,
        help_text="Count only: nothing is written; the answer has a "
        "token that confirms exactly this operation.",
    )


class BulkConfirmSerializer(serializers.Serializer):
    token = JSONText(
        max_length=4000,
        validators=[StorableText("token")],
        help_text="The token a dry run returned, or a pass's resume_token "
        "(valid 15 minutes, for its user only).",
    )


class BulkOperationSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=bulk.ACTIONS)
    filter = serializers.DictField(child=serializers.JSONField(), help_text="The filter as given.")


class BulkPreviewSerializer(BulkOperationSerializer):
    dry_run = serializers.BooleanField(help_text="Always true here: nothing was written.")
    count = serializers.IntegerField(
        help_text="Runs the action would act on (their status allows it)."
    )
    matched = serializers.IntegerField(help_text="Runs the filter keeps, whatever their status.")
    sample = serializers.ListField(
        child=serializers.CharField(), help_text="Up to 10 run ids of `count`."
    )
    token = serializers.CharField(help_text="POST it to /api/bulk/confirm/ to act on these runs.")
    expires_in_seconds = serializers.IntegerField()


class SkippedRunSerializer(serializers.Serializer):
    id = serializers.CharField()
    reason = serializers.CharField()


class BulkResultSerializer(BulkOperationSerializer):
    dry_run = serializers.BooleanField(help_text="Always false here.")
    bulk_id = serializers.CharField(
        help_text="In every audit row this operation wrote (detail.bulk.id)."
    )
    acted = serializers.IntegerField(help_text="Runs acted on, one audit row each.")
    skipped = serializers.IntegerField(help_text="Runs whose status no longer allowed the action.")
    skipped_runs = SkippedRunSerializer(many=True, help_text="The first 20 skipped, with why.")
    remaining = serializers.IntegerField(
        help_text="Runs this pass did not reach: it stops after "
        "DURABLE_BULK_PASS_SECONDS (20 s), under the web timeout."
    )
    resume_token = serializers.CharField(
        allow_blank=True,
        help_text="When `remaining`: POST it to "
        "/api/bulk/confirm/ to go on where this pass stopped; empty when done.",
    )


def preview_body(preview: bulk.BulkPreview) -> dict:
    return {
        **preview.operation.describe(),
        "dry_run": True,
        "count": preview.count,
        "matched": preview.matched,
        "sample": preview.sample,
        "token": preview.token,
        "expires_in_seconds": conf.bulk_confirm_seconds(),
    }


def result_body(result: bulk.BulkResult) -> dict:
    return {
        **result.operation.describe(),
        "dry_run": False,
        "bulk_id": result.bulk_id,
        "acted": result.acted,
        "skipped": result.skipped,
        "skipped_runs": [{"id": run_id, "reason": why} for run_id, why in result.skipped_runs],
        "remaining": result.remaining,
        "resume_token": result.resume_token,
    }


class BulkView(DurableAPIView):
    serializer_class = BulkRequestSerializer

    @extend_schema(
        operation_id="bulk_run",
        request=BulkRequestSerializer,
        responses={
            200: PolymorphicProxySerializer(
                component_name="BulkOutcome",
                serializers=[BulkPreviewSerializer, BulkResultSerializer],
                resource_type_field_name=None,
            ),
            **errors(400, 401, 403, 413, 415),
        },
        summary="Retry, wake or cancel every run a filter keeps: with dry_run, count only and "
        "return a confirmation token; without, act, one audit row per run.",
    )
    def post(self, request):
        body = BulkRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        operation = bulk.BulkOperation(
            data["action"], data["filter"], reason=data["reason"], graceful=data["graceful"]
        )
        audit = self.audit()
        try:
            if data["dry_run"]:
                return Response(preview_body(bulk.bulk_preview(operation, actor=audit["actor"])))
            return Response(result_body(bulk.bulk_apply(operation, **audit)))
        except bulk.BulkError as error:
            raise BulkRefused(error) from None


class BulkConfirmView(DurableAPIView):
    serializer_class = BulkConfirmSerializer

    @extend_schema(
        operation_id="bulk_confirm",
        request=BulkConfirmSerializer,
        responses={200: BulkResultSerializer, **errors(400, 401, 403, 413, 415)},
        summary="Do what a dry run counted (its runs created by then, in a status that "
        "still allows the action).",
    )
    def post(self, request):
        body = BulkConfirmSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            result = bulk.bulk_confirm(body.validated_data["token"], **self.audit())
        except bulk.BulkError as error:
            raise BulkRefused(error) from None
        return Response(result_body(result))
