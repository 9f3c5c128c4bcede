/*
 * service_auto.h - the libraries made services on their own (service_auto.c).
 */
#ifndef VLCS_SERVICE_AUTO_H
#define VLCS_SERVICE_AUTO_H

#include "common.h"

/* The libraries that must exist once per process (service_auto.c) made
 * services, those not tried yet; called before a load takes any lock. */
HIDDEN void services_auto_add(void);

#endif
