"""The API's own authentication: obtain a token with a username and password; revoke it."""

from __future__ import annotations

from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import exceptions as drf_exceptions
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.services import token_issue, token_revoke
from accounts.throttling import LoginRefusal, LoginThrottle, refusal_body
from dpportal.api import ApiView, PublicApiView, error_responses, validated_input
from dpportal.tokens import token_expires_at


class TokenObtainApi(PublicApiView):
    """Exchange a username and password for the user's API token.

    The same token while it is valid (DPPORTAL_TOKEN_LIFETIME from its issue), a new
    one once it has expired. Refused before the password is tried (429 with a message
    and Retry-After) while the username is locked from this address or slowed
    (accounts.throttling).
    """

    @extend_schema_serializer(component_name="TokenObtainInput")
    class InputSerializer(serializers.Serializer):
        username = serializers.CharField(max_length=150)
        password = serializers.CharField(max_length=4096, trim_whitespace=False)

    @extend_schema_serializer(component_name="TokenObtainOutput")
    class OutputSerializer(serializers.Serializer):
        token = serializers.CharField(help_text="Send it as 'Authorization: Token <token>'.")
        username = serializers.CharField()
        expires_at = serializers.DateTimeField(
            help_text="After this the token answers 401 'token_expired': obtain a new one."
        )

    @extend_schema(
        operation_id="auth_token_create",
        summary="Obtain an API token with a username and password",
        auth=[],
        request=InputSerializer,
        responses={200: OutputSerializer, **error_responses(400, 401, 429)},
    )
    def post(self, request: Request) -> Response:
        data = validated_input(self.InputSerializer, request)
        throttle = LoginThrottle(request=request._request, username=data["username"])
        refusal = throttle.refusal()
        if refusal is not None:
            return self.refused(refusal)
        # a wrong password is recorded by axes (the user_login_failed signal)
        user = authenticate(
            request=request._request,
            username=data["username"],
            password=data["password"],
        )
        if user is None or not user.is_active:
            # the failure that locks the pair says so at once
            refusal = throttle.after_failure()
            if refusal is not None:
                return self.refused(refusal)
            raise drf_exceptions.AuthenticationFailed(
                "Unable to log in with this username and password."
            )
        throttle.succeeded()
        token = token_issue(user=user)
        output = {
            "token": token.key,
            "username": user.get_username(),
            "expires_at": token_expires_at(token),
        }
        return Response(self.OutputSerializer(output).data)

    @staticmethod
    def refused(refusal: LoginRefusal) -> Response:
        return Response(
            refusal_body(refusal), status=429, headers={"Retry-After": str(refusal.seconds)}
        )


class TokenRevokeApi(ApiView):
    """Revoke the caller's API token: every client holding it gets 401 from now on."""

    @extend_schema_serializer(component_name="TokenRevokeOutput")
    class OutputSerializer(serializers.Serializer):
        revoked = serializers.BooleanField(help_text="False when the caller had no token.")

    @extend_schema(
        operation_id="auth_token_revoke",
        summary="Revoke my API token",
        request=None,
        responses={200: OutputSerializer, **error_responses(401, 403, 429)},
    )
    def post(self, request: Request) -> Response:
        return Response({"revoked": token_revoke(user=request.user)})
