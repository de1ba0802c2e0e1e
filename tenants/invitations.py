"""Console users join a tenant by invitation: an operator invites tenant admins, a tenant admin
invites colleagues (admin or read-only); the invited person sets a password through a one-time
link and is signed in.

The invitation is the user itself, created without a usable password: the link carries Django's
password-reset token for that user, which is valid only until a password is set (the token
hashes the password and the last sign-in) and at most ``PASSWORD_RESET_TIMEOUT`` (3 days), so
it works once.  The e-mail goes out through Django's e-mail backend after the transaction
commits; development settings print it (console backend) and have the console show the link.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from .api.access import is_operator, may_write
from .audit import record
from .models import Principal, Tenant
from .services import Actor, create_principal


@dataclass(frozen=True)
class Invitation:
    principal: Principal
    accept_url: str  # absolute: the one-time link


def accept_path(user: User) -> str:
    """``/invite/<uid>/<token>/`` for a user who has not set a password yet."""
    return reverse("dashboard:invite-accept", kwargs={
        "uidb64": urlsafe_base64_encode(force_bytes(user.pk)),
        "token": default_token_generator.make_token(user)})


def is_pending(user: User) -> bool:
    """Invited, no password set yet."""
    return not user.has_usable_password()


def _principal_name(email: str, tenant: Tenant) -> str:
    """A principal name from the address's local part ([a-zA-Z0-9_-]), unique in the tenant."""
    base = re.sub(r"[^a-zA-Z0-9_-]", "-", email.split("@")[0])[:90] or "user"
    name, n = base, 1
    while tenant.principals.filter(name=name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


@transaction.atomic
def invite(actor: Actor, tenant: Tenant, *, email: str, role: str, site_url: str) -> Invitation:
    """Create the invited console user and its principal, and mail the one-time link.

    ``site_url`` is the console's address as the inviter reached it (for the link).  Operators
    may invite into any tenant; a tenant's admins into their own; nobody else.
    """
    if not (is_operator(actor) or may_write(actor, tenant)):
        raise ValidationError("Only operators and the tenant's admins may invite.")
    email = email.strip().lower()
    validate_email(email)
    if role not in Principal.CONSOLE_ROLES:
        raise ValidationError({"role": f"one of {', '.join(Principal.CONSOLE_ROLES)}"})
    if User.objects.filter(username=email).exists():
        raise ValidationError({"email": "this address already has an account"})
    user = User(username=email, email=email)
    user.set_unusable_password()
    user.save()
    principal = create_principal(actor, tenant, name=_principal_name(email, tenant),
                                 kind=Principal.USER, role=role, user=user,
                                 description=f"invited {email}")
    record(actor, tenant, "user.invite", email, role=role)
    url = site_url.rstrip("/") + accept_path(user)
    transaction.on_commit(lambda: send_mail(
        f"You are invited to {tenant.name} on kafkasaas",
        f"You have been invited to manage the Kafka tenant {tenant.name} ({tenant.slug}) as "
        f"{principal.get_role_display()}.\n\nSet your password and sign in (the link works "
        f"once, for {settings.PASSWORD_RESET_TIMEOUT // 86400} days):\n{url}\n\n"
        f"Your user name is {email}.\n",
        None, [email]))
    return Invitation(principal, url)
