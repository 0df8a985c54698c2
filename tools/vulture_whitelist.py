"""Names vulture cannot see used: read by C (ctypes structs and BPF maps), by Textual
(widget attributes it reads), by callers' keyword protocols, or generated tables.

``tests/test_repo_hygiene.py`` runs ``vulture gtop tests benchmarks tools`` with this file;
every name here is used, and says where.
"""

# ctypes structures shared with C: the kernel (perf_event_attr), the BPF object's maps
# (offcpu.h) and NVML's GPM sample struct
clockid  # perf_event_attr.clockid (collectors/threads/perf.py)
io_enter_ns  # struct thread_state in offcpu.h, written into the BPF map
numMetrics  # nvmlGpmMetricsGet_t (collectors/nvml.py)
sample1  # nvmlGpmMetricsGet_t
sample2  # nvmlGpmMetricsGet_t
metricId  # nvmlGpmMetric_t

# Textual reads these attributes and calls these methods itself
border_title
no_wrap
get_content_height
_on_tab_pane_focused  # a TabbedContent message handler (views/screens/process.py)
animation_level  # App.animation_level, read by Textual (views/app.py turns animations off)
render_line  # the line API of a ScrollView (views/widgets/row_table.py)
virtual_size  # a ScrollView's scrollable size (views/widgets/row_table.py)
required  # argparse subparsers: sub.required

# Triton's kernel_load_end_hook calls fn(module, function, name, metadata_group, hash)
hash

# enum members and generated tables: values that records carry
HTOA, ATOH, ATOA, ATOD, DTOA, DTOD, HTOH, PTOP  # core.layouts.CopyKind
CUPTI_API_VERSION  # cupti.tables, generated
first_start  # probes.catalog.block_sched.SmStats: each SM's first block, for tail analysis

# analysis.diagnosis.verdict.Verdict fields that reach the report through as_json (asdict)
phrase, explanation, share_of_window
after_step_s  # analysis.diagnosis.gains.Gain, in the report through as_json (dataclasses.asdict)

# the io module calls these on a raw stream (recordings/exporters/output.py's stdout wrapper)
writable

# registers the kernel reads from a ptrace SETREGS (collectors/agent/safepoint.py)
orig_rax, eflags

# module attribute protocol (PEP 562): gtop/__init__.py loads the API on first use
__getattr__, __dir__

# socketserver reads these class attributes, http.server calls log_message (headless.py)
address_family, daemon_threads, log_message
