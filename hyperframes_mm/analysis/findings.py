"""What every check of the doctor returns: a :class:`Finding` (severity, code, message, fix)."""
from dataclasses import dataclass

#: Severities, most serious first (the order :func:`~.doctor.diagnose` sorts by).
SEVERITIES = ('error', 'warning', 'info')


@dataclass(frozen=True)
class Finding:
    """One problem (or note) about a config.

    Attributes:
        severity (str): ``'error'`` (training fails or learns the wrong thing), ``'warning'``
            (results suffer) or ``'info'`` (a measurement or a check that could not run).
        code (str): the check, e.g. ``'num-frames'``.
        message (str): what is wrong and where.
        fix (str): one line saying what to change.
    """
    severity: str
    code: str
    message: str
    fix: str = ''

    def format(self) -> str:
        """``SEVERITY [code] message`` and an indented ``fix:`` line."""
        text = f'{self.severity.upper():<7} [{self.code}] {self.message}'
        return text + (f'\n        fix: {self.fix}' if self.fix else '')
