"""The processes' admin: document files only through the permission-checked view, never /media/."""

import pytest
from django.contrib.auth.models import Permission, User
from django.core.files.base import ContentFile

from processes.onboarding.models import Company, Document, DocumentKind

pytestmark = pytest.mark.django_db

PDF = b"%PDF-1.4\n% a contract\n"


@pytest.fixture
def contract(settings, tmp_path) -> Document:
    settings.MEDIA_ROOT = tmp_path
    company = Company.objects.create(wa_id="5511999990001", name="Padaria Boa Massa")
    document = Document.objects.create(
        company=company,
        kind=DocumentKind.ARTICLES,
        media_id="MEDIA-1",
        mime_type="application/pdf",
        file_name="contrato.pdf",
    )
    document.file.save("MEDIA-1.pdf", ContentFile(PDF))
    return document


def staff(username: str, *codenames: str) -> User:
    user = User.objects.create_user(username, password="pw-unused-123", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="processes", codename__in=codenames)
    )
    return user


def file_url(document: Document) -> str:
    return f"/admin/processes/document/{document.pk}/file/"


def test_the_company_page_links_its_documents_to_the_checked_view_never_to_media(client, contract):
    client.force_login(User.objects.create_superuser("root", password="pw-unused-123"))

    page = client.get(f"/admin/processes/company/{contract.company.pk}/change/").content.decode()

    assert f'href="{file_url(contract)}"' in page
    assert "/media/" not in page


def test_the_document_page_links_the_file_to_the_checked_view_and_takes_no_upload(client, contract):
    client.force_login(User.objects.create_superuser("root", password="pw-unused-123"))

    page = client.get(f"/admin/processes/document/{contract.pk}/change/").content.decode()

    assert f'href="{file_url(contract)}"' in page
    assert "/media/" not in page
    assert 'type="file"' not in page


def test_an_operator_allowed_to_view_documents_downloads_the_file_as_an_attachment(
    client, contract
):
    client.force_login(staff("operator", "view_document"))

    response = client.get(file_url(contract))

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == PDF
    assert response["Content-Disposition"] == 'attachment; filename="contrato.pdf"'
    assert response["X-Content-Type-Options"] == "nosniff"


def test_staff_without_the_document_permission_gets_403(client, contract):
    client.force_login(staff("clerk", "view_company"))

    response = client.get(file_url(contract))

    assert response.status_code == 403


def test_an_anonymous_visitor_is_sent_to_the_login_page(client, contract):
    response = client.get(file_url(contract))

    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_staff_may_correct_a_documents_kind_but_never_what_was_received(client, contract):
    client.force_login(User.objects.create_superuser("root", password="pw-unused-123"))
    received = Document.objects.values(
        "company", "media_id", "mime_type", "sha256", "size", "file_name", "message_id"
    ).get(pk=contract.pk)

    response = client.post(
        f"/admin/processes/document/{contract.pk}/change/",
        {
            "kind": DocumentKind.ADDRESS,
            "caption": "conta de luz",
            "sha256": "0" * 64,
            "mime_type": "text/html",
            "size": 1,
            "media_id": "media-forged",
            "file_name": "forged.pdf",
            "message_id": "wamid.FORGED",
            "company": 999,
        },
    )

    assert response.status_code == 302
    assert (
        Document.objects.values(
            "company", "media_id", "mime_type", "sha256", "size", "file_name", "message_id"
        ).get(pk=contract.pk)
        == received
    )
    assert Document.objects.get(pk=contract.pk).kind == DocumentKind.ADDRESS
