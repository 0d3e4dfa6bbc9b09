"""The REST API of schedules: list them, pause, resume, and start the occurrence of now.

Thin, as the runs' API: parse, check permission, call ``durable.features.schedules``.
Reading needs ``durable.view_schedule``; every write ``durable.operate_schedule``.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import BasePermission
from rest_framework.response import Response

from durable.features import schedules
from durable.surfaces.api import DurableAPIView, error_response, errors, exception_handler
from durable.surfaces.serializers import (
    RunSerializer,
    SchedulePauseSerializer,
    ScheduleSerializer,
    ScheduleTriggerSerializer,
)


class HasSchedulePermission(BasePermission):
    def has_permission(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return False
        needed = "view" if request.method in ("GET", "HEAD", "OPTIONS") else "operate"
        return request.user.has_perm(f"durable.{needed}_schedule")


def schedule_exception_handler(exc, context):
    if isinstance(exc, schedules.ScheduleNotFound):
        return error_response(status.HTTP_404_NOT_FOUND, "schedule_not_found", str(exc))
    return exception_handler(exc, context)


class ScheduleAPIView(DurableAPIView):
    permission_classes = [HasSchedulePermission]

    def get_exception_handler(self):
        return schedule_exception_handler


class ScheduleCollectionView(ScheduleAPIView):
    serializer_class = ScheduleSerializer

    @extend_schema(
        operation_id="schedules_list",
        responses={200: ScheduleSerializer(many=True), **errors(401, 403)},
        summary="Every schedule: its cron, zone, state, next and last occurrence.",
    )
    def get(self, request):
        return Response(ScheduleSerializer(schedules.schedules_listed(), many=True).data)


class SchedulePauseView(ScheduleAPIView):
    serializer_class = SchedulePauseSerializer

    @extend_schema(
        operation_id="schedules_pause",
        request=SchedulePauseSerializer,
        responses={200: ScheduleSerializer, **errors(400, 401, 403, 404, 413, 415)},
        summary=(
            "Stop firing (occurrences while paused are skipped); pausing twice changes nothing."
        ),
    )
    def post(self, request, name):
        body = SchedulePauseSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        schedule = schedules.schedule_pause(
            name, reason=body.validated_data["reason"], **self.audit()
        )
        return Response(ScheduleSerializer(schedule).data)


class ScheduleResumeView(ScheduleAPIView):
    serializer_class = None

    @extend_schema(
        operation_id="schedules_resume",
        request=None,
        responses={200: ScheduleSerializer, **errors(401, 403, 404, 413)},
        summary="Fire again from the next occurrence after now.",
    )
    def post(self, request, name):
        return Response(ScheduleSerializer(schedules.schedule_resume(name, **self.audit())).data)


class ScheduleTriggerView(ScheduleAPIView):
    serializer_class = None

    @extend_schema(
        operation_id="schedules_trigger",
        request=None,
        responses={
            201: ScheduleTriggerSerializer,
            200: ScheduleTriggerSerializer,
            **errors(400, 401, 403, 404, 409, 413),
        },
        summary="Start the occurrence of now by hand (201); its run id is the id template "
        "rendered for now, so a run that exists under it is returned as it is (200).",
    )
    def post(self, request, name):
        run, started = schedules.schedule_trigger(name, **self.audit())
        data = {
            "schedule": ScheduleSerializer(schedules.schedule_get(name)).data,
            "run": RunSerializer(run).data,
            "started": started,
        }
        return Response(data, status=status.HTTP_201_CREATED if started else status.HTTP_200_OK)
