// SPDX-License-Identifier: Apache-2.0
/* Per-thread on/off-CPU intervals with stacks, for a set of processes (and the children
 * they fork), plus cpu-clock on-CPU samples and each on-CPU stretch's time inside I/O
 * syscalls. Kernel and user stacks go to separate stack maps (fewer hash collisions). Records go to per-CPU rings of fixed slots
 * in mmap-able arrays; user space reads them as numpy arrays (threads_bpf.py).
 * Each scheduler hook exists as tp_btf, raw_tp and tracepoint; the loader enables the
 * first kind that loads. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "offcpu.h"

#define SLOTS (1u << SLOT_BITS)
#define TASK_REPORT_MAX 0x100
#define E2BIG 7
#define ENOMEM 12
#define EEXIST 17
#define PF_EXITING 0x00000004

const volatile __u32 nr_cpus = 1;
const volatile bool user_stacks = true;
/* io_syscall[nr] != 0: syscall nr is I/O (blockreason's IO class, set by the loader) */
const volatile __u8 io_syscall[MAX_SYSCALL] = {};

/* Write heads of the rings (one per CPU) and counters; user space reads .bss. */
__u64 switch_head[MAX_CPUS];
__u64 sample_head[MAX_CPUS];
__u64 kstack_errors; /* stacks the kstacks / ustacks map refused (full or collided) */
__u64 ustack_errors;
__u64 state_full;
__u64 missed_switch_ins; /* switch-outs of a thread whose switch-in no hook saw */
__u64 missed_switch_outs;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct switch_event);
	__uint(max_entries, 1); /* nr_cpus * SLOTS, set by the loader */
} switch_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sample_event);
	__uint(max_entries, 1);
} sample_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
	__uint(max_entries, 4096);
} tracked SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32); /* tid */
	__type(value, struct thread_state);
	__uint(max_entries, 16384);
} threads SEC(".maps");

/* One stack map per kind, sized by the loader: a kernel stack and a user stack never
 * compete for one hash bucket. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 127 * sizeof(__u64));
	__uint(max_entries, 1);
} kstacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 127 * sizeof(__u64));
	__uint(max_entries, 1);
} ustacks SEC(".maps");

static __always_inline bool is_tracked(__u32 tgid)
{
	return tgid && bpf_map_lookup_elem(&tracked, &tgid);
}

static __always_inline struct thread_state *get_state(__u32 tid, __u32 tgid, __u64 now)
{
	struct thread_state *s = bpf_map_lookup_elem(&threads, &tid);
	if (s)
		return s;
	struct thread_state init = {.on_ns = now, .pid = tgid, .syscall = -1,
				    .ustack = -1, .kstack = -1, .oncpu = 1};
	if (bpf_map_update_elem(&threads, &tid, &init, BPF_NOEXIST) == -E2BIG)
		__sync_fetch_and_add(&state_full, 1);
	return bpf_map_lookup_elem(&threads, &tid);
}

/* -EEXIST: the bucket holds another stack (a hash collision); -ENOMEM: no free entry
 * (the map is full). Both are counted. An empty stack (-EFAULT, e.g. the kernel stack of
 * a sample taken in user mode) is no error. */
static __always_inline __s32 kstack_id(void *ctx)
{
	__s32 id = bpf_get_stackid(ctx, &kstacks, 0);
	if (id == -EEXIST || id == -ENOMEM)
		__sync_fetch_and_add(&kstack_errors, 1);
	return id;
}

static __always_inline __s32 ustack_id(void *ctx)
{
	if (!user_stacks)
		return -1;
	__s32 id = bpf_get_stackid(ctx, &ustacks, BPF_F_USER_STACK);
	if (id == -EEXIST || id == -ENOMEM)
		__sync_fetch_and_add(&ustack_errors, 1);
	return id;
}

/* Report the stretch ``s`` describes (switch_event) and start the next one at ``t_in``. */
static __always_inline void begin_stretch(struct thread_state *s, __u32 tid, __u64 t_in)
{
	__u32 cpu = bpf_get_smp_processor_id();
	if (cpu < nr_cpus && cpu < MAX_CPUS) {
		__u64 head = switch_head[cpu];
		__u32 slot = cpu * SLOTS + (head & (SLOTS - 1));
		struct switch_event *e = bpf_map_lookup_elem(&switch_ring, &slot);
		if (e) {
			e->cpu_ns = s->cpu_ns;
			e->on_ns = s->on_ns;
			e->off_ns = s->off_ns;
			e->wake_ns = s->wake_ns;
			e->in_ns = t_in;
			e->pid = s->pid;
			e->tid = tid;
			e->syscall = s->syscall;
			e->ustack = s->ustack;
			e->kstack = s->kstack;
			e->flags = s->flags;
			e->gpu_enter_ns = s->gpu_enter_ns;
			e->gpu_exit_ns = s->gpu_exit_ns;
			e->io_enter_ns = s->io_enter_ns;
			e->io_head_ns = s->io_head_ns;
			e->io_mid_start_ns = s->io_mid_start_ns;
			e->io_mid_ns = s->io_mid_ns;
			__sync_fetch_and_add(&switch_head[cpu], 1);
		}
	}
	s->on_ns = t_in;
	s->oncpu = 1;
	s->io_head_ns = 0;
	s->io_mid_start_ns = 0;
	s->io_mid_ns = 0;
}

static __always_inline int on_switch(void *ctx, bool runnable, __u32 next_tid, __u32 next_tgid)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 prev_id = bpf_get_current_pid_tgid();
	__u32 prev_tid = (__u32)prev_id, prev_tgid = prev_id >> 32;
	struct thread_state *s;

	struct task_struct *cur = (void *)bpf_get_current_task();
	if (prev_tid && is_tracked(prev_tgid) && (BPF_CORE_READ(cur, flags) & PF_EXITING)) {
		/* an exiting thread (its last switch-outs, after sched_process_exit dropped its
		 * state): not blocked, gone; report nothing more for it */
		bpf_map_delete_elem(&threads, &prev_tid);
	} else if (prev_tid && is_tracked(prev_tgid)) {
		s = get_state(prev_tid, prev_tgid, now);
		if (s) {
			__u64 exec = BPF_CORE_READ(cur, se.sum_exec_runtime);
			__u64 ran = s->exec_ns && exec > s->exec_ns ? exec - s->exec_ns : 0;
			if (!s->oncpu) {
				/* Running, yet its switch-in never reached us (measured: on a
				 * Firecracker guest, 6.18, under one switch in a hundred
				 * passes no hook). Report the stretch before it now, and
				 * place the switch-in by the CPU time charged since: its CPU
				 * time stays exact and only its start is inferred. */
				__u64 t_in = ran < now - s->off_ns ? now - ran : s->off_ns;
				if (s->wake_ns > t_in && s->wake_ns <= now)
					t_in = s->wake_ns;
				begin_stretch(s, prev_tid, t_in);
				__sync_fetch_and_add(&missed_switch_ins, 1);
			}
			s->cpu_ns = ran;
			s->exec_ns = exec;
			s->off_ns = now;
			s->wake_ns = runnable ? now : 0;
			s->flags = (runnable ? FLAG_PREEMPTED : 0) | (s->gpu_depth ? FLAG_GPU_WAIT : 0);
			s->kstack = kstack_id(ctx);
			s->ustack = ustack_id(ctx);
			s->oncpu = 0;
		}
	}

	s = bpf_map_lookup_elem(&threads, &next_tid);
	if (!s) {
		/* first switch-in of a thread we have not seen yet: start its on-CPU stretch */
		if (next_tid && is_tracked(next_tgid))
			get_state(next_tid, next_tgid, now);
		return 0;
	}
	if (s->oncpu) {
		/* its switch-out never reached us: the stretch goes on, and the next switch-out
		 * charges it the CPU time of both (the gap between reads as runnable) */
		__sync_fetch_and_add(&missed_switch_outs, 1);
		return 0;
	}
	begin_stretch(s, next_tid, now);
	return 0;
}

static __always_inline int on_wakeup(__u32 tid)
{
	struct thread_state *s = bpf_map_lookup_elem(&threads, &tid);
	if (s && !s->oncpu && !s->wake_ns)
		s->wake_ns = bpf_ktime_get_ns();
	return 0;
}

static __always_inline int on_sys_enter(long id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!is_tracked(pid_tgid >> 32))
		return 0;
	__u64 now = bpf_ktime_get_ns();
	struct thread_state *s = get_state((__u32)pid_tgid, pid_tgid >> 32, now);
	if (!s)
		return 0;
	s->syscall = id;
	s->io_enter_ns = id >= 0 && id < MAX_SYSCALL && io_syscall[id] ? now : 0;
	return 0;
}

static __always_inline int on_sys_exit(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct thread_state *s = bpf_map_lookup_elem(&threads, &tid);
	if (!s)
		return 0;
	s->syscall = -1;
	if (s->io_enter_ns) {
		__u64 now = bpf_ktime_get_ns();
		if (s->io_enter_ns < s->on_ns) {
			s->io_head_ns = now; /* the call the stretch began in */
		} else {
			if (!s->io_mid_ns)
				s->io_mid_start_ns = s->io_enter_ns;
			s->io_mid_ns += now - s->io_enter_ns;
		}
		s->io_enter_ns = 0;
	}
	return 0;
}

static __always_inline int on_fork(__u32 child)
{
	__u8 one = 1;
	if (is_tracked(bpf_get_current_pid_tgid() >> 32))
		bpf_map_update_elem(&tracked, &child, &one, BPF_ANY);
	return 0;
}

static __always_inline int on_exit(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_delete_elem(&threads, &tid);
	/* fork-following added thread ids too; a process leaves with its leader */
	bpf_map_delete_elem(&tracked, &tid);
	return 0;
}

static __always_inline bool task_runnable(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state) == 0;
	struct task_struct___old {
		long state;
	} *o = (void *)t;
	return BPF_CORE_READ(o, state) == 0;
}

/* --- tp_btf ------------------------------------------------------------------------ */
SEC("tp_btf/sched_switch")
int BPF_PROG(btf_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(ctx, preempt || prev->__state == 0, next->pid, next->tgid);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(btf_wakeup, struct task_struct *p)
{
	return on_wakeup(p->pid);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(btf_sys_enter, struct pt_regs *regs, long id)
{
	return on_sys_enter(id);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(btf_sys_exit, struct pt_regs *regs, long ret)
{
	return on_sys_exit();
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(btf_fork, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(child->pid);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(btf_exit, struct task_struct *p)
{
	return on_exit();
}

/* --- raw_tp ------------------------------------------------------------------------- */
SEC("raw_tp/sched_switch")
int BPF_PROG(raw_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(ctx, preempt || task_runnable(prev), BPF_CORE_READ(next, pid),
			 BPF_CORE_READ(next, tgid));
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(raw_wakeup, struct task_struct *p)
{
	return on_wakeup(BPF_CORE_READ(p, pid));
}

SEC("raw_tp/sys_enter")
int BPF_PROG(raw_sys_enter, struct pt_regs *regs, long id)
{
	return on_sys_enter(id);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(raw_sys_exit, struct pt_regs *regs, long ret)
{
	return on_sys_exit();
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(raw_fork, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(BPF_CORE_READ(child, pid));
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(raw_exit, struct task_struct *p)
{
	return on_exit();
}

/* --- tracepoint: no next tgid, so a thread is known once it switched out or syscalled */
SEC("tp/sched/sched_switch")
int tp_switch(struct trace_event_raw_sched_switch *a)
{
	long st = a->prev_state;
	return on_switch(a, st == 0 || (st & TASK_REPORT_MAX), a->next_pid, 0);
}

SEC("tp/sched/sched_wakeup")
int tp_wakeup(struct trace_event_raw_sched_wakeup_template *a)
{
	return on_wakeup(a->pid);
}

SEC("tp/raw_syscalls/sys_enter")
int tp_sys_enter(struct trace_event_raw_sys_enter *a)
{
	return on_sys_enter(a->id);
}

SEC("tp/raw_syscalls/sys_exit")
int tp_sys_exit(struct trace_event_raw_sys_exit *a)
{
	return on_sys_exit();
}

SEC("tp/sched/sched_process_fork")
int tp_fork(struct trace_event_raw_sched_process_fork *a)
{
	return on_fork(a->child_pid);
}

SEC("tp/sched/sched_process_exit")
int tp_exit(void *a)
{
	return on_exit();
}

/* --- GPU synchronisation calls (uprobes on libcuda, attached per process) ------------ */
static __always_inline int gpu_wait(bool enter)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!is_tracked(pid_tgid >> 32))
		return 0;
	struct thread_state *s = get_state((__u32)pid_tgid, pid_tgid >> 32, bpf_ktime_get_ns());
	if (!s)
		return 0;
	if (enter) {
		if (!s->gpu_depth++)
			s->gpu_enter_ns = bpf_ktime_get_ns();
	} else if (s->gpu_depth && !--s->gpu_depth) {
		s->gpu_exit_ns = bpf_ktime_get_ns();
	}
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(gpu_wait_enter)
{
	return gpu_wait(true);
}

SEC("uretprobe")
int BPF_KRETPROBE(gpu_wait_exit)
{
	return gpu_wait(false);
}

/* --- cpu-clock sampling ---------------------------------------------------------------- */
SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 cpu = bpf_get_smp_processor_id();
	if (!(__u32)pid_tgid || !is_tracked(pid_tgid >> 32) || cpu >= nr_cpus || cpu >= MAX_CPUS)
		return 0;
	__u64 head = sample_head[cpu];
	__u32 slot = cpu * SLOTS + (head & (SLOTS - 1));
	struct sample_event *e = bpf_map_lookup_elem(&sample_ring, &slot);
	if (!e)
		return 0;
	e->t_ns = bpf_ktime_get_ns();
	e->pid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->kstack = kstack_id(ctx);
	e->ustack = ustack_id(ctx);
	e->cpu = cpu;
	__sync_fetch_and_add(&sample_head[cpu], 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
