/* Removing a directory tree that a sandbox may have filled (a workspace,
 * an upper layer): never following a symlink planted in it, never
 * walking into another filesystem mounted below it. */
#ifndef AB_BASE_RM_RF_H
#define AB_BASE_RM_RF_H

/* 0 when path is gone (or was never there), -1 with errno otherwise. */
int ab_rm_rf (const char *path);

#endif
