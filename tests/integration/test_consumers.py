"""syscope's outputs as the tools people already use read them (issue 21): rocpd's categories
and views as upstream rocpd defines them, hatchet's JSON layout, Perfetto traces checked with
Perfetto's own trace processor where it is present, and the summaries' rankings."""
import csv
import os
import sqlite3

import harness
from harness import check, check_eq, fixture, syscope

from rocpd_checks import check_conventions, rows

# Upstream rocpd's views, column for column (rocprofiler-sdk's data_views.sql and
# summary_views.sql, schema version 3): what users of plain sqlite3 and pandas select by name.
UPSTREAM_COLUMNS = {
    "kernel_symbols": [
        "id", "guid", "nid", "pid", "code_object_id", "kernel_name", "display_name",
        "kernel_object", "kernarg_segment_size", "kernarg_segment_alignment",
        "group_segment_size", "private_segment_size", "sgpr_count", "arch_vgpr_count",
        "accum_vgpr_count", "kernel_symbol_size", "kernel_id", "kernel_code_entry_byte_offset",
        "formatted_kernel_name", "demangled_kernel_name", "truncated_kernel_name",
        "kernel_address"],
    "pmc_info": [
        "id", "guid", "nid", "pid", "agent_abs_index", "is_constant", "is_derived", "name",
        "description", "block", "expression"],
    "pmc_events": [
        "id", "guid", "pmc_id", "event_id", "category", "name", "nid", "pid", "dispatch_id",
        "start", "end", "duration", "counter_name", "counter_value"],
    "events_args": [
        "event_id", "category", "stack_id", "parent_stack_id", "correlation_id",
        "arg_position", "arg_type", "arg_name", "arg_value", "call_stack", "line_info",
        "extdata"],
    "stream_args": [
        "argument_id", "event_id", "arg_position", "arg_type", "arg_value", "stream_id", "nid",
        "pid", "stream_name", "extdata"],
    "scratch_memory": [
        "id", "guid", "nid", "pid", "operation", "agent_name", "agent_abs_index",
        "agent_log_index", "agent_type_index", "agent_type", "queue_id", "tid", "alloc_flags",
        "start", "end", "duration", "size", "address", "correlation_id", "stack_id",
        "parent_stack_id", "corr_id", "category", "event_extdata"],
    "counters_collection": [
        "id", "guid", "dispatch_id", "kernel_id", "event_id", "correlation_id", "stack_id",
        "parent_stack_id", "pid", "tid", "agent_id", "agent_abs_index", "agent_log_index",
        "agent_type_index", "agent_type", "queue_id", "grid_size_x", "grid_size_y",
        "grid_size_z", "grid_size", "kernel_name", "kernel_region", "workgroup_size_x",
        "workgroup_size_y", "workgroup_size_z", "workgroup_size", "lds_block_size",
        "scratch_size", "vgpr_count", "accum_vgpr_count", "sgpr_count", "counter_name",
        "counter_symbol", "component", "description", "block", "expression", "value_type",
        "counter_id", "value", "start", "end", "is_constant", "is_derived", "duration",
        "category", "nid", "extdata", "code_object_id"],
    "busy": ["agent_id", "type", "GpuTime", "WallTime", "Busy"],
    "top": ["name", "total_calls", "total_duration", "average", "percentage"],
    "top_kernels": ["name", "total_calls", "total_duration", "average", "percentage"],
}


def columns(db, view):
    return [row[1] for row in db.execute(f"PRAGMA table_xinfo('{view}')")]


def summary_groups(categories):
    """The region summaries `rocpd summary` makes (rocpd/summary.py, as of schema version 3):
    one per prefix before the first '_', holding the categories that start with PREFIX_;
    markers have a summary of their own."""
    groups = {}
    for prefix in {c.split("_")[0] for c in categories}:
        if "MARKER" in prefix.upper():
            continue
        kept = [c for c in categories if c.startswith(prefix + "_")]
        check(prefix.lower() not in groups, f"two groups named {prefix.lower()}: one is lost")
        if kept:
            groups[prefix.lower()] = kept
    return groups


def test_rocpd_views_are_upstreams():
    r = syscope("sample", "-f", "500", "--output-format", "rocpd", "--", fixture("regions"))
    check_eq(r.rc, 0, r.describe())
    db = sqlite3.connect(r.path(f"rocpd-{r.main_pid()}.db"))
    check_conventions(db)
    for view, expected in UPSTREAM_COLUMNS.items():
        check_eq(columns(db, view), expected, f"view {view}")


def test_rocpd_summary_keeps_every_category():
    r = syscope("sample", "-f", "500", "--output-format", "rocpd", "--", fixture("regions"))
    check_eq(r.rc, 0, r.describe())
    db = sqlite3.connect(r.path(f"rocpd-{r.main_pid()}.db"))
    categories = [c for (c,) in rows(db, "SELECT DISTINCT category FROM regions_and_samples")]
    check_eq(sorted(categories), ["COUNTER_USER", "USER_REGION", "USER_compute", "timer_sampling"],
             "categories named as rocprofiler names them")
    groups = summary_groups(categories)
    check_eq(sorted(groups), ["counter", "timer", "user"], "the summaries rocpd summary makes")
    check_eq(sorted(groups["user"]), ["USER_REGION", "USER_compute"], "user summary")
    # Every region reaches a summary: none is in a category the tool drops.
    kept = {c for cats in groups.values() for c in cats}
    lost = rows(db, "SELECT name, category FROM regions_and_samples")
    check_eq([x for x in lost if x[1] not in kept], [], "regions rocpd summary would drop")
    # syscope reads its own names back: the converted session has its categories again.
    out = os.path.join(r.workdir, "from-db")
    c = syscope("convert", "-f", "csv", "-o", out, r.path(f"rocpd-{r.main_pid()}.db"))
    check_eq(c.rc, 0, c.describe())
    with open(os.path.join(out, f"regions-{r.main_pid()}.csv"), newline="") as f:
        named = {(row["Category"], row["Name"]) for row in csv.DictReader(f)}
    check({("compute", "worker"), ("user", "inner"), ("user", "checkpoint")} <= named, named)


harness.main(globals())
