"""Every `--anatomy-*` flag and `anatomy_*` ini key, spelled once.

A leaf module (no imports) so that the plugin's hooks, the fixtures, the CLI and the catalog's
error messages can name an option without importing pytest's option machinery: a renamed flag is
renamed here and nowhere else (options.py registers and validates them)."""

from __future__ import annotations

SOURCE_OPTION = "--anatomy-source"
HARDWARE_OPTION = "--anatomy-hardware"
MODEL_OPTION = "--anatomy-model"
RECORD_OPTION = "--anatomy-record"
STRICT_FINDINGS_OPTION = "--anatomy-strict-findings"
ALLOW_RESOLVED_OPTION = "--anatomy-allow-resolved"
SUMMARY_OPTION = "--anatomy-summary"
REPORT_OPTION = "--anatomy-report"
SPEC_SOURCE_OPTION = "--anatomy-spec-source"
PLAN_OPTION = "--anatomy-plan"

SOURCE_INI = "anatomy_source"
HARDWARE_INI = "anatomy_hardware"
MODEL_INI = "anatomy_model"
RESULTS_DIR_INI = "anatomy_results_dir"
REPLAY_HARDWARE_INI = "anatomy_replay_hardware"

OPTIONS: tuple[str, ...] = (
    SOURCE_OPTION, HARDWARE_OPTION, MODEL_OPTION, RECORD_OPTION, STRICT_FINDINGS_OPTION, ALLOW_RESOLVED_OPTION,
    SUMMARY_OPTION, REPORT_OPTION, SPEC_SOURCE_OPTION, PLAN_OPTION,
)
INI_KEYS: tuple[str, ...] = (SOURCE_INI, HARDWARE_INI, MODEL_INI, RESULTS_DIR_INI, REPLAY_HARDWARE_INI)
