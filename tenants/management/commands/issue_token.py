"""`python manage.py issue_token USERNAME`: print the user's REST API token (created if missing)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Print an API token for USERNAME, for automation (Authorization: Token <token>)."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("username")

    def handle(self, *args, username: str, **options):  # type: ignore[no-untyped-def]
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)
