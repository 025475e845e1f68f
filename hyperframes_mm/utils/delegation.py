"""Attributes a composed module reads off one of its parts."""


def delegated(part: str, name: str, doc: str) -> property:
    """A read-only property that gives ``self.<part>.<name>``.

    A wrapper (a backbone around its hyperframe stem, a head around another head) shows the
    attributes its callers read without keeping a copy that could go stale when the part
    changes (``reinflate`` changes the stem's ``num_frames``).
    """
    return property(lambda self: getattr(getattr(self, part), name), doc=doc)
