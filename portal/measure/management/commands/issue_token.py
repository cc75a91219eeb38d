"""manage.py issue_token USERNAME: creates the user if needed and prints a new API token once;
only its hash is stored (models.ApiToken)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from portal.measure.models import ApiToken


class Command(BaseCommand):
    help = "Create USERNAME if needed and print a new API token for it (only its hash is stored)."

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username, **options):
        user, created = get_user_model().objects.get_or_create(username=username)
        if created:
            user.set_unusable_password()
            user.save()
            self.stderr.write(f"created user {username} (no password; set one with changepassword to log in)")
        # The token goes alone on stdout so scripts can capture it: TOKEN=$(manage.py issue_token me)
        self.stdout.write(ApiToken.issue(user))
