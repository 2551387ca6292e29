/* The monotonic clock in seconds: for durations, deadlines and budgets (never the time of day). */
#ifndef SP_CLOCK_H
#define SP_CLOCK_H

double sp_now_s(void);

#endif
