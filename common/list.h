/* The one intrusive doubly linked list: a struct list_node inside each element, a struct
 * list_node as the head (circular, so insertion and removal never test for an end).  Used for
 * LRU orders (the chunk cache, open files, idle streams) and queues.
 *
 * Not thread-safe: the list's owner says which lock guards it.  A node is in one list at a
 * time; list_del leaves it self-linked, so list_linked tells whether it is in one and a
 * second list_del is harmless.
 */
#ifndef TARSEEK_LIST_H
#define TARSEEK_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list_node {
	struct list_node *prev, *next;
};

/* The element holding node n, whose member is named member (n may not be NULL). */
#define list_entry(n, type, member) ((type *)((char *)(n) - offsetof(type, member)))

/* For a head or a node not in any list. */
static inline void list_init(struct list_node *n)
{
	n->prev = n->next = n;
}

static inline bool list_empty(const struct list_node *head)
{
	return head->next == head;
}

static inline bool list_linked(const struct list_node *n)
{
	return n->next != n;
}

static inline void list_insert_between(struct list_node *n, struct list_node *prev,
				       struct list_node *next)
{
	n->prev = prev;
	n->next = next;
	prev->next = n;
	next->prev = n;
}

/* n becomes the first (most recent) element. */
static inline void list_add_head(struct list_node *head, struct list_node *n)
{
	list_insert_between(n, head, head->next);
}

/* n becomes the last (oldest) element. */
static inline void list_add_tail(struct list_node *head, struct list_node *n)
{
	list_insert_between(n, head->prev, head);
}

static inline void list_del(struct list_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	list_init(n);
}

/* Moves n (in a list or not) to the head of head. */
static inline void list_move_head(struct list_node *head, struct list_node *n)
{
	list_del(n);
	list_add_head(head, n);
}

/* The first / last node, or NULL when the list is empty. */
static inline struct list_node *list_first(const struct list_node *head)
{
	return list_empty(head) ? NULL : head->next;
}

static inline struct list_node *list_last(const struct list_node *head)
{
	return list_empty(head) ? NULL : head->prev;
}

/* for (n = first; n != head; n = next), safe against removing n in the body. */
#define list_for_each_safe(n, tmp, head)                                                           \
	for ((n) = (head)->next, (tmp) = (n)->next; (n) != (head); (n) = (tmp), (tmp) = (n)->next)

#endif
