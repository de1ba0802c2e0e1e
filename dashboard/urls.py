"""Console routes: tenant pages under /t/<slug>/, operators' pages under /ops/."""

from django.contrib.auth import views as auth_views
from django.urls import path

from .views import (
    billing,
    certificates,
    connection,
    groups,
    operator,
    security,
    team,
    tenant,
    topic_detail,
)

app_name = "dashboard"
urlpatterns = [
    path("", tenant.home, name="home"),
    path("login/", auth_views.LoginView.as_view(template_name="dashboard/login.html"),
         name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("invite/<uidb64>/<token>/", team.InvitationAcceptView.as_view(), name="invite-accept"),
    path("t/<slug:slug>/team/", team.team, name="team"),
    path("ca.pem", connection.ca_certificate, name="ca-certificate"),
    path("t/<slug:slug>/", tenant.overview, name="tenant"),
    path("t/<slug:slug>/topics/", tenant.topics, name="topics"),
    path("t/<slug:slug>/topics/<str:name>/delete/", tenant.topic_delete, name="topic-delete"),
    path("t/<slug:slug>/topics/<str:name>/", topic_detail.topic_page, name="topic"),
    path("t/<slug:slug>/topics/<str:name>/traffic.json", topic_detail.topic_traffic,
         name="topic-traffic"),
    path("t/<slug:slug>/topics/<str:name>/configs/", topic_detail.topic_config, name="topic-config"),
    path("t/<slug:slug>/topics/<str:name>/messages/", topic_detail.topic_messages,
         name="topic-messages"),
    path("t/<slug:slug>/api-keys/", tenant.api_keys, name="api-keys"),
    path("t/<slug:slug>/api-keys/<str:key>/revoke/", tenant.api_key_revoke, name="api-key-revoke"),
    path("t/<slug:slug>/client-certificates/", certificates.client_certificates,
         name="client-certificates"),
    path("t/<slug:slug>/client-certificates/<str:serial>/revoke/",
         certificates.client_certificate_revoke, name="client-certificate-revoke"),
    path("t/<slug:slug>/acls/", tenant.acls, name="acls"),
    path("t/<slug:slug>/acls/<int:pk>/revoke/", tenant.acl_revoke, name="acl-revoke"),
    path("t/<slug:slug>/client-ids/", tenant.client_ids, name="client-ids"),
    path("t/<slug:slug>/client-ids/<int:pk>/delete/", tenant.client_id_delete,
         name="client-id-delete"),
    path("t/<slug:slug>/quotas/", tenant.quotas, name="quotas"),
    path("t/<slug:slug>/quotas/<int:pk>/delete/", tenant.quota_delete, name="quota-delete"),
    path("t/<slug:slug>/invoices/", billing.invoices, name="invoices"),
    path("t/<slug:slug>/consumer-groups/", groups.group_list, name="groups"),
    path("t/<slug:slug>/consumer-groups/<str:group>/", groups.group_page, name="group"),
    path("t/<slug:slug>/consumer-groups/<str:group>/reset/", groups.group_reset,
         name="group-reset"),
    path("ops/tenants/", operator.tenants, name="ops-tenants"),
    path("ops/tenants/<slug:slug>/status/", operator.tenant_status, name="ops-tenant-status"),
    path("ops/brokers/", operator.brokers, name="ops-brokers"),
    path("ops/security/", security.security, name="ops-security"),
    path("ops/brokers/preferred-election/", operator.preferred_election, name="ops-preferred-election"),
]
