/* proc — which process is which, across pid reuse: a process is identified by its pid and
 * "BOOT/START", the kernel's boot id and the process's start time in clock ticks since boot
 * (proc(5): /proc/sys/kernel/random/boot_id, field 22 of /proc/PID/stat). A pid whose
 * identity differs from a recorded one belongs to another process (the recorded one is gone).
 * Linux only; elsewhere the identity is empty and only the pid's existence is known. */
#ifndef SCALEPLAN_PROC_H
#define SCALEPLAN_PROC_H

#include <stddef.h>

/* The identity of process pid into buf (empty when /proc cannot say); 0, or -1 when no such
 * process exists. */
int proc_identity(long pid, char *buf, size_t cap);
/* 1 when the process recorded as (pid, identity) still runs; identity may be empty (then the
 * pid's existence decides). */
int proc_alive(long pid, const char *identity);

#endif
