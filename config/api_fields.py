"""Serializer fields that accept only the JSON type the schema promises (no coercion)."""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from django.db import models
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from rest_framework import serializers

_NOT_BLANK = "This field may not be blank."


class _Strict:
    """Refuses values whose JSON type is not the field's own."""

    json_types: tuple[type, ...] = ()
    type_name = ""

    def to_internal_value(self, data: Any) -> Any:
        # bool is an int subclass in Python but not a JSON number.
        if not isinstance(data, self.json_types) or (
            isinstance(data, bool) and bool not in self.json_types
        ):
            raise serializers.ValidationError(f"Must be a {self.type_name}.", code="invalid")
        return super().to_internal_value(data)


class StrictCharField(_Strict, serializers.CharField):
    """A string, never a number turned into one."""

    json_types, type_name = (str,), "string"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.trim_whitespace and not self.allow_blank:
            # Spaces alone are trimmed to blank and refused: the schema says so (`pattern`),
            # so a client (or a fuzzer) reading it knows "\f" is not a message.
            self.validators.append(RegexValidator(r"\S", message=_NOT_BLANK))


class StrictUUIDField(_Strict, serializers.UUIDField):
    """A UUID written as a string."""

    json_types, type_name = (str,), "UUID string"


class StrictIntegerField(_Strict, serializers.IntegerField):
    """A JSON integer."""

    json_types, type_name = (int,), "integer"


class StrictFloatField(_Strict, serializers.FloatField):
    """A JSON number."""

    json_types, type_name = (int, float), "number"


class StrictBooleanField(_Strict, serializers.BooleanField):
    """true or false."""

    json_types, type_name = (bool,), "boolean"


class StrictURLField(_Strict, serializers.URLField):
    """A URL string."""

    json_types, type_name = (str,), "string"


class StrictSlugField(_Strict, serializers.SlugField):
    """A slug string."""

    json_types, type_name = (str,), "string"


class StrictModelSerializer(serializers.ModelSerializer):
    """A ModelSerializer whose generated fields are strict about JSON types."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.CharField: StrictCharField,
        models.TextField: StrictCharField,
        models.SlugField: StrictSlugField,
        models.URLField: StrictURLField,
        models.UUIDField: StrictUUIDField,
        models.IntegerField: StrictIntegerField,
        models.PositiveIntegerField: StrictIntegerField,
        models.PositiveSmallIntegerField: StrictIntegerField,
        models.SmallIntegerField: StrictIntegerField,
        models.FloatField: StrictFloatField,
        models.BooleanField: StrictBooleanField,
    }


class StrictSlugRelatedField(serializers.SlugRelatedField):
    """A related object by slug; "" is invalid (DRF would read it as null, as HTML forms do)."""

    def run_validation(self, data: Any = serializers.empty) -> Any:
        """Refuse the empty string and non-strings before the lookup."""
        if (
            data is not serializers.empty
            and data is not None
            and (not isinstance(data, str) or data == "")
        ):
            raise serializers.ValidationError("Must be a non-empty name.", code="invalid")
        return super().run_validation(data)


class NonNegativeDecimalSchema(OpenApiSerializerFieldExtension):
    """A decimal string that may not be negative (a `min_value` of 0 or more) says so in its
    schema: its pattern has no leading minus (drf-spectacular writes `^-?…` for every decimal)."""

    target_class = "rest_framework.fields.DecimalField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> Any:
        """The field's usual schema, without the minus when the field refuses one."""
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        minimum = getattr(self.target, "min_value", None)
        pattern = schema.get("pattern", "")
        if minimum is not None and minimum >= 0 and pattern.startswith("^-?"):
            schema["pattern"] = "^" + pattern[3:]
        return schema
