"""The API's own authentication: exchange a username and password for a token."""

from __future__ import annotations

from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import exceptions as drf_exceptions
from rest_framework import serializers
from rest_framework.authtoken.models import Token
from rest_framework.request import Request
from rest_framework.response import Response

from dpportal.api import PublicApiView, error_responses, validated_input


class TokenObtainApi(PublicApiView):
    """Exchange a username and password for the user's API token (created once, then reused)."""

    @extend_schema_serializer(component_name="TokenObtainInput")
    class InputSerializer(serializers.Serializer):
        username = serializers.CharField(max_length=150)
        password = serializers.CharField(max_length=4096, trim_whitespace=False)

    @extend_schema_serializer(component_name="TokenObtainOutput")
    class OutputSerializer(serializers.Serializer):
        token = serializers.CharField(help_text="Send it as 'Authorization: Token <token>'.")
        username = serializers.CharField()

    @extend_schema(
        operation_id="auth_token_create",
        summary="Obtain an API token with a username and password",
        auth=[],
        request=InputSerializer,
        responses={200: OutputSerializer, **error_responses(400, 401, 429)},
    )
    def post(self, request: Request) -> Response:
        data = validated_input(self.InputSerializer, request)
        user = authenticate(
            request=request._request,
            username=data["username"],
            password=data["password"],
        )
        if user is None or not user.is_active:
            raise drf_exceptions.AuthenticationFailed(
                "Unable to log in with this username and password."
            )
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key, "username": user.get_username()})
