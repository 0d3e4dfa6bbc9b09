"""Shapes of the REST API: runs, their journal and signals out; start, signal, cancel in.

Thin: input serializers only check shape and storability; the services decide.
"""
from rest_framework import serializers

from durable import validation
from durable.errors import DurableError
from durable.models import JournalEntry, RunStatus, Signal, WorkflowRun


def _storable(what: str):
    def check(value):
        try:
            if isinstance(value, str):
                validation.check_text(value, what=what)
            else:
                validation.check_json_value(value, what=what)
        except DurableError as error:
            raise serializers.ValidationError(str(error)) from None
        return value
    return check


class JournalEntrySerializer(serializers.ModelSerializer):
    duration_seconds = serializers.SerializerMethodField()
    result = serializers.JSONField(allow_null=True)
    error = serializers.JSONField(allow_null=True)

    class Meta:
        model = JournalEntry
        fields = ["position", "kind", "name", "status", "attempt", "idempotency_key",
                  "started_at", "wake_at", "duration_seconds", "result", "error", "updated_at"]

    def get_duration_seconds(self, entry) -> float | None:
        return entry.duration.total_seconds() if entry.duration is not None else None


class SignalSerializer(serializers.ModelSerializer):
    consumed = serializers.SerializerMethodField()
    payload = serializers.JSONField(allow_null=True)

    class Meta:
        model = Signal
        fields = ["id", "name", "payload", "dedupe_key", "consumed", "consumed_position",
                  "consumed_at", "created_at"]

    def get_consumed(self, signal) -> bool:
        return signal.consumed_position is not None


class RunSerializer(serializers.ModelSerializer):
    workflow = serializers.CharField(source="workflow_name")
    version = serializers.IntegerField(source="workflow_version")
    input = serializers.JSONField()
    result = serializers.JSONField(allow_null=True)
    error = serializers.JSONField(allow_null=True)
    attributes = serializers.DictField(
        child=serializers.JSONField(allow_null=True), read_only=True,
        help_text="Search attributes the workflow set (JSON scalars); `stage` is its human status.")

    class Meta:
        model = WorkflowRun
        fields = ["id", "workflow", "version", "status", "input", "result", "error", "waiting_for",
                  "wake_at", "advances", "attributes", "created_at", "updated_at", "finished_at"]


class RunDetailSerializer(RunSerializer):
    journal = JournalEntrySerializer(many=True, read_only=True)
    signals = SignalSerializer(many=True, read_only=True)

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "journal", "signals"]


class RunFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=RunStatus.choices, required=False)
    workflow = serializers.CharField(required=False, max_length=200, validators=[_storable("workflow")])
    version = serializers.IntegerField(required=False, min_value=1, max_value=2**31 - 1)


class RunStartSerializer(serializers.Serializer):
    workflow = serializers.CharField(max_length=200, validators=[_storable("workflow")],
                                     help_text="A registered workflow name; its latest version starts.")
    id = serializers.CharField(required=False, max_length=255, validators=[_storable("id")],
                               help_text="The run id (e.g. onboarding:c-42). Starting an existing id "
                                         "with the same input returns that run.")
    args = serializers.ListField(child=serializers.JSONField(), required=False, default=list)
    kwargs = serializers.DictField(child=serializers.JSONField(), required=False, default=dict)


class SignalSendSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=255, validators=[_storable("name")])
    payload = serializers.JSONField(required=False, allow_null=True, default=None,
                                    validators=[_storable("payload")])


class RunCancelSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=1000,
                                   validators=[_storable("reason")])


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    detail = serializers.JSONField(allow_null=True)


class ErrorSerializer(serializers.Serializer):
    """Every error of the API has this shape."""

    error = ErrorBodySerializer()
