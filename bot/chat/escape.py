"""The one escaping function of Slack and Teams (:func:`common.markup.inert`), where the
chat front ends import it from."""
from common.markup import TARGETS, ZWSP, inert

__all__ = ["TARGETS", "ZWSP", "inert"]
