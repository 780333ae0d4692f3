"""What the papers' released code computes, declared and proved beside what the papers write.

Each `AuditEntry` pairs the paper's formula (a declaration: usually a catalog name) with what
the released code computes (a declaration typed from the code we read, or a line saying why it
cannot be declared), and cites the repository, commit, file and line range it was read from.
`audit_page()` renders the gallery page "What the reference code computes": every order on it is
`check`ed when the page is built, never typed.

The code's blocks are written in terms of the paper's field F (the residual-free branch). One
module per audited codebase holds its declarations and entries (`ode_transformer`, `macaron`:
the Macaron paper, the Conformer and x-transformers, `floater`); `records` holds what an entry
is, and `page` renders them.
"""

from .extracted import library_section, sweep_section
from .floater import FLOATER_CODE, floater_entry
from .macaron import (
    CONFORMER_SEPARATE,
    CONFORMER_SHARED,
    MACARON_CANCELLED_SHARED,
    MACARON_SEPARATE,
    X_COMMIT,
    macaron_entries,
)
from .ode_transformer import (
    CODE_DECODER_TWICE,
    CODE_GATED,
    CODE_RK2,
    CODE_RK3,
    CODE_RK3_READING,
    CODE_RK4,
    ode_entries,
)
from .page import audit_page, entries, entry_section, verdict
from .records import AuditEntry, Side, Source, Trained

__all__ = [
    "CODE_DECODER_TWICE",
    "CODE_GATED",
    "CODE_RK2",
    "CODE_RK3",
    "CODE_RK3_READING",
    "CODE_RK4",
    "CONFORMER_SEPARATE",
    "CONFORMER_SHARED",
    "FLOATER_CODE",
    "MACARON_CANCELLED_SHARED",
    "MACARON_SEPARATE",
    "X_COMMIT",
    "AuditEntry",
    "Side",
    "Source",
    "Trained",
    "audit_page",
    "entries",
    "entry_section",
    "floater_entry",
    "library_section",
    "macaron_entries",
    "ode_entries",
    "sweep_section",
    "verdict",
]
