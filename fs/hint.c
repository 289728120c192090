/* Reads announced at lookup (see hint.h). */
#include "fs/hint.h"


bool hint_looked_up(struct hint *h, uint64_t ino)
{
	bool give;

	pthread_mutex_lock(&h->lock);
	h->ring[h->pos++ % HINT_RING] = ino;
	if (++h->looked > HINT_WINDOW) { /* older lookups count half as much */
		h->looked /= 2;
		h->read /= 2;
	}
	give = h->looked <= HINT_START || 2 * h->read >= h->looked;
	if (give)
		h->given++;
	else
		h->held++;
	pthread_mutex_unlock(&h->lock);
	return give;
}

void hint_read(struct hint *h, uint64_t ino)
{
	pthread_mutex_lock(&h->lock);
	for (unsigned i = 0; i < HINT_RING; i++) {
		if (h->ring[i] == ino) {
			h->ring[i] = 0; /* counted once */
			h->read++;
			break;
		}
	}
	pthread_mutex_unlock(&h->lock);
}

void hint_counts(struct hint *h, uint64_t *given, uint64_t *held)
{
	pthread_mutex_lock(&h->lock);
	*given = h->given;
	*held = h->held;
	pthread_mutex_unlock(&h->lock);
}
