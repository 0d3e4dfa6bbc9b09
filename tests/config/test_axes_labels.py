"""The login lockouts' admin (django-axes, which ships no pt-BR) reads in Portuguese too."""

from axes.models import AccessAttempt, AccessLog
from django.utils import translation


def test_the_lockout_models_are_named_in_portuguese():
    with translation.override("pt-br"):
        names = [str(model._meta.verbose_name_plural) for model in (AccessAttempt, AccessLog)]
        field = str(AccessAttempt._meta.get_field("ip_address").verbose_name)

    assert names == ["tentativas de acesso", "registros de acesso"] and field == "Endereço IP"
