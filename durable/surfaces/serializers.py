"""Shapes of the REST API: runs, their journal and signals out; start, signal, cancel in.

Thin: input serializers only check shape and storability; the services decide.
"""

from django.core.validators import RegexValidator
from rest_framework import serializers

from durable import selectors, validation
from durable.errors import DurableError, PayloadTooDeep
from durable.models import JournalEntry, RunStatus, Signal, WorkflowRun
from durable.models.schedules import Schedule


def _storable(what: str):
    def check(value):
        try:
            if isinstance(value, str):
                validation.check_text(value, what=what)
            else:
                validation.check_json_value(value, what=what)
        except PayloadTooDeep:
            raise  # the API answers it as payload_error, like the codec's own refusals
        except DurableError as error:
            raise serializers.ValidationError(str(error)) from None
        return value

    return check


class StorableText(RegexValidator):
    """Text the database can store; being a RegexValidator, it also puts "no NUL" into the
    OpenAPI schema as a pattern, so clients (and schemathesis) know the rule."""

    def __init__(self, what: str):
        super().__init__(r"^[^\x00]*$")
        self.what = what

    def __call__(self, value):
        _storable(self.what)(value)

    def __eq__(self, other):
        return isinstance(other, StorableText) and other.what == self.what


class ExactText(serializers.CharField):
    """Text taken as sent: DRF's CharField trims white space, so a value the schema accepts
    (a non-empty string, say one of Unicode's spaces) became blank and was refused."""

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)


class JSONText(ExactText):
    """A JSON string, and only that: DRF's CharField reads 0 or true as "0" or "True",
    which a client whose schema says string should hear is wrong."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class JSONBoolean(serializers.BooleanField):
    """A JSON true or false, and only that: DRF's BooleanField also takes 0, 1, "yes", "off"."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class JSONInteger(serializers.IntegerField):
    """A JSON whole number, and only that: DRF's IntegerField also takes "3", 3.0 and true."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class JournalEntrySerializer(serializers.ModelSerializer):
    duration_seconds = serializers.SerializerMethodField()
    result = serializers.JSONField(allow_null=True)
    error = serializers.JSONField(allow_null=True)

    class Meta:
        model = JournalEntry
        fields = [
            "position",
            "kind",
            "name",
            "status",
            "attempt",
            "idempotency_key",
            "started_at",
            "wake_at",
            "duration_seconds",
            "result",
            "error",
            "updated_at",
        ]

    def get_duration_seconds(self, entry) -> float | None:
        return entry.duration.total_seconds() if entry.duration is not None else None


class SignalSerializer(serializers.ModelSerializer):
    consumed = serializers.SerializerMethodField()
    payload = serializers.JSONField(allow_null=True)

    class Meta:
        model = Signal
        fields = [
            "id",
            "name",
            "payload",
            "dedupe_key",
            "consumed",
            "consumed_position",
            "consumed_at",
            "created_at",
        ]

    def get_consumed(self, signal) -> bool:
        return signal.consumed_position is not None


class RunSerializer(serializers.ModelSerializer):
    workflow = serializers.CharField(source="workflow_name")
    version = serializers.IntegerField(source="workflow_version")
    input = serializers.JSONField()
    result = serializers.JSONField(allow_null=True)
    error = serializers.JSONField(allow_null=True)
    attributes = serializers.DictField(
        child=serializers.JSONField(allow_null=True),
        read_only=True,
        help_text="Search attributes the workflow set (JSON scalars); `stage` is its human status.",
    )
    parent = serializers.CharField(
        source="parent_id",
        read_only=True,
        allow_null=True,
        help_text="The run that started this one as a child, if any.",
    )
    forked_from = serializers.CharField(
        source="forked_from_id",
        read_only=True,
        allow_null=True,
        help_text="The run this one was forked from, if any.",
    )
    fork_position = serializers.IntegerField(
        read_only=True,
        allow_null=True,
        help_text="Where the fork ran again from: the entries before it are the source's.",
    )
    continued_as = serializers.CharField(
        source="continued_as_id",
        read_only=True,
        allow_null=True,
        help_text="The run this one continued as (status continued).",
    )

    class Meta:
        model = WorkflowRun
        fields = [
            "id",
            "workflow",
            "version",
            "status",
            "input",
            "result",
            "error",
            "waiting_for",
            "wake_at",
            "advances",
            "attributes",
            "parent",
            "forked_from",
            "fork_position",
            "continued_as",
            "priority",
            "created_at",
            "updated_at",
            "finished_at",
        ]


class RunDetailSerializer(RunSerializer):
    journal = JournalEntrySerializer(many=True, read_only=True)
    signals = SignalSerializer(many=True, read_only=True)
    children = serializers.SerializerMethodField(
        help_text="Ids of the runs this one started as children."
    )
    forks = serializers.SerializerMethodField(
        help_text="Ids of the runs forked from this one, oldest first."
    )
    chain = serializers.SerializerMethodField(
        help_text=(
            "Ids of the runs of this one's continue-as-new chain, oldest first (empty if "
            "none); the last is the newest, which signals and queries to any of them reach."
        )
    )

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "children", "forks", "chain", "journal", "signals"]

    def get_children(self, run) -> list[str]:
        return list(run.children.order_by("created_at", "id").values_list("id", flat=True))

    def get_forks(self, run) -> list[str]:
        return list(run.forks.order_by("created_at", "id").values_list("id", flat=True))

    def get_chain(self, run) -> list[str]:
        return selectors.run_chain(run)


class RunFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=RunStatus.choices, required=False)
    workflow = ExactText(required=False, max_length=200, validators=[StorableText("workflow")])
    version = serializers.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
    parent = ExactText(
        required=False,
        max_length=255,
        validators=[StorableText("parent")],
        help_text="Only the children of this run.",
    )

    def validate(self, attrs):
        # DRF reads an empty query value of an optional field as absent: ?workflow= would list
        # every run instead of saying the filter is wrong.
        blank = sorted(name for name in self.fields if self.initial_data.get(name) == "")
        if blank:
            raise serializers.ValidationError(
                {name: ["This field may not be blank."] for name in blank}
            )
        return attrs


class RunStartSerializer(serializers.Serializer):
    workflow = JSONText(
        max_length=200,
        validators=[StorableText("workflow")],
        help_text="A registered workflow name; its latest version starts.",
    )
    id = JSONText(
        required=False,
        max_length=255,
        validators=[StorableText("id")],
        help_text="The run id (e.g. onboarding:c-42). Starting an existing id "
        "with the same input returns that run.",
    )
    args = serializers.ListField(child=serializers.JSONField(), required=False, default=list)
    kwargs = serializers.DictField(child=serializers.JSONField(), required=False, default=dict)
    priority = JSONInteger(
        required=False,
        default=5,
        min_value=0,
        max_value=9,
        help_text="0 to 9, higher first: the sweep's pick, a limit's line, the broker.",
    )


class SignalSendSerializer(serializers.Serializer):
    name = JSONText(max_length=255, validators=[StorableText("name")])
    payload = serializers.JSONField(
        required=False, allow_null=True, default=None, validators=[_storable("payload")]
    )


class RunCancelSerializer(serializers.Serializer):
    reason = JSONText(
        required=False,
        allow_blank=True,
        default="",
        max_length=1000,
        validators=[StorableText("reason")],
    )
    graceful = JSONBoolean(
        required=False,
        default=False,
        help_text="Let the workflow clean up first: workflow.Cancelled is raised where it waits, "
        "and the run ends cancelled when its cleanup returns (at most an hour).",
    )


class RunForkSerializer(serializers.Serializer):
    at_position = JSONInteger(
        min_value=0,
        max_value=2**31 - 1,
        help_text="The first journal position to run again: the fork keeps the "
        "entries before it and runs the code deployed now from there.",
    )
    id = JSONText(
        required=False,
        max_length=255,
        validators=[StorableText("id")],
        help_text="The new run's id (default: workflow:uuid). Asking again with the same id, "
        "run and position returns that fork.",
    )


class UpdateSendSerializer(serializers.Serializer):
    payload = serializers.JSONField(
        required=False, allow_null=True, default=None, validators=[_storable("payload")]
    )
    timeout = serializers.FloatField(
        required=False,
        default=10.0,
        min_value=0,
        max_value=30,
        help_text="Seconds to wait for the run to apply it (0 to 30, default 10).",
    )

    def validate_timeout(self, value):
        if isinstance(self.initial_data.get("timeout"), bool | str):
            raise serializers.ValidationError("A JSON number.")
        return value


class UpdateResultSerializer(serializers.Serializer):
    update_id = serializers.CharField()
    status = serializers.ChoiceField(
        choices=["applied", "stored"],
        help_text="applied: result is the handler's; stored: not applied yet.",
    )
    result = serializers.JSONField(allow_null=True)


class QueryAnswerSerializer(serializers.Serializer):
    query = serializers.CharField()
    result = serializers.JSONField(
        allow_null=True, help_text="What the query's handler returned, as JSON."
    )


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    detail = serializers.JSONField(allow_null=True)


class ErrorSerializer(serializers.Serializer):
    """Every error of the API has this shape."""

    error = ErrorBodySerializer()


class ScheduleSerializer(serializers.ModelSerializer):
    workflow = serializers.CharField(source="workflow_name")
    args = serializers.ListField(child=serializers.JSONField(allow_null=True))
    kwargs = serializers.DictField(child=serializers.JSONField(allow_null=True))

    class Meta:
        model = Schedule
        fields = [
            "name",
            "workflow",
            "cron",
            "timezone",
            "id_template",
            "args",
            "kwargs",
            "catch_up",
            "paused",
            "next_fire_at",
            "last_fired_at",
            "last_run_id",
            "last_error",
            "created_at",
            "updated_at",
        ]


class SchedulePauseSerializer(serializers.Serializer):
    reason = JSONText(
        required=False,
        allow_blank=True,
        default="",
        max_length=1000,
        validators=[StorableText("reason")],
    )


class ScheduleTriggerSerializer(serializers.Serializer):
    schedule = ScheduleSerializer()
    run = RunSerializer()
    started = serializers.BooleanField(help_text="False when the occurrence's run existed already.")
