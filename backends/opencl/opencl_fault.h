/* The OpenCL plugin's test hook (build option OPREG_FAULT_INJECTION): the
 * classes of OpenCL calls that ocl_fi_arm(n, classes), exported by the
 * module and found with dlsym(), can make fail. Shared by the plugin and its
 * fault-injection test; nothing here needs the OpenCL headers. */
#ifndef OPREG_OPENCL_FAULT_H
#define OPREG_OPENCL_FAULT_H

#define OCL_FI_CREATE  1u /* contexts, queues, buffers */
#define OCL_FI_BUILD   2u /* the program, its build, its kernels */
#define OCL_FI_ENQUEUE 4u /* kernel launches */

/* The hook's functions, as the test declares them for dlsym(). */
typedef void (*ocl_fi_arm_fn)(unsigned long n, unsigned classes);
typedef unsigned long (*ocl_fi_calls_fn)(void);
typedef _Bool (*ocl_fi_failed_fn)(void);

#endif
