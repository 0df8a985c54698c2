/* The contract between offcpu.bpf.c and threads_bpf.py: only what user space reads.
 * Field order and sizes are mirrored by the numpy dtypes in threads_bpf.py. */
#ifndef GTOP_OFFCPU_H
#define GTOP_OFFCPU_H

#define MAX_CPUS 512
#define SLOT_BITS 13 /* 8192 records per CPU and ring */
#define MAX_SYSCALL 512 /* syscall numbers classified by io_syscall[] */

#define FLAG_PREEMPTED 1 /* switched out while runnable: the off-CPU time is run-queue wait */
#define FLAG_SEEDED 2    /* off-CPU since before attach: user space seeded the state */
#define FLAG_GPU_WAIT 4  /* switched out inside a probed GPU synchronisation call */

/* One per switch-in of a tracked thread: its last on-CPU stretch [on_ns, off_ns), then
 * blocked [off_ns, wake_ns), then runnable [wake_ns, in_ns). 0 means unknown.
 * cpu_ns is the CPU time the scheduler charged for the stretch (se.sum_exec_runtime,
 * what schedstat reports); on a VM it excludes stolen time. */
struct switch_event {
	__u64 cpu_ns;
	__u64 on_ns;
	__u64 off_ns;
	__u64 wake_ns;
	__u64 in_ns;
	__u32 pid;
	__u32 tid;
	__s32 syscall; /* syscall in progress at switch-out, -1 none */
	__s32 ustack;  /* ids in the ustacks / kstacks maps, negative errno when refused */
	__s32 kstack;
	__u32 flags;
	/* the thread's latest probed GPU synchronisation call (outermost, nested ones count
	 * once): entered at gpu_enter_ns, returned at gpu_exit_ns (0: never, or before the
	 * latest entry when still inside it). Tells the on-CPU part of the stretch spent
	 * inside the call (spinning) from the rest. */
	__u64 gpu_enter_ns;
	__u64 gpu_exit_ns;
	/* On-CPU time inside I/O syscalls (io_syscall[] set by the loader) during the stretch
	 * [on_ns, off_ns): the call in progress at switch-in returned at io_head_ns (0: none,
	 * or still in it); calls entered and returned within the stretch took io_mid_ns in
	 * all, the first entered at io_mid_start_ns; the call in progress at switch-out was
	 * entered at io_enter_ns (0: none; before on_ns: the whole stretch). */
	__u64 io_enter_ns;
	__u64 io_head_ns;
	__u64 io_mid_start_ns;
	__u64 io_mid_ns;
};

/* One cpu-clock sample of a tracked thread. */
struct sample_event {
	__u64 t_ns;
	__u32 pid;
	__u32 tid;
	__s32 ustack;
	__s32 kstack;
	__u32 cpu;
	__u32 pad;
};

/* Per tracked thread, read by user space to report intervals still in progress. */
struct thread_state {
	__u64 exec_ns; /* se.sum_exec_runtime at the last switch-out, 0 unknown */
	__u64 cpu_ns;
	__u64 on_ns;
	__u64 off_ns;
	__u64 wake_ns;
	__u32 pid;
	__s32 syscall;
	__s32 ustack;
	__s32 kstack;
	__u32 flags;
	__u32 oncpu;
	__u32 gpu_depth; /* nesting of probed GPU synchronisation calls in progress */
	__u32 pad;
	__u64 gpu_enter_ns; /* as in switch_event */
	__u64 gpu_exit_ns;
	__u64 io_enter_ns; /* as in switch_event, for the current stretch */
	__u64 io_head_ns;
	__u64 io_mid_start_ns;
	__u64 io_mid_ns;
};

#endif
