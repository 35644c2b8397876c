//! The client's table of requests that are due or in flight.
//!
//! Memory stays bounded by the number of outstanding requests, not the length of the run: a
//! finished request's slot is reused. Each key carries a generation, so an event about a request
//! that has since finished (a server answering after the client timed out) finds nothing rather
//! than the slot's new occupant.
use crate::event::Key;

/// A client request from the moment it is due until it is recorded.
#[derive(Debug, Clone)]
pub(crate) struct Req {
    pub lane: u32,
    /// When it was due (open, tracking) or sent (closed), in ns from the start of the run.
    pub intended: u64,
    /// When its first attempt was sent; `None` while it waits for a connection.
    pub sent: Option<u64>,
    pub waited: bool,
    /// 0 for the first attempt, 1 for the engine's one retry on a fresh connection.
    pub attempt: u8,
    /// When the current attempt was sent.
    pub attempt_sent: u64,
    /// Whether its current connection had already served a request (the engine retries a
    /// connection dropped before any answer only on such a connection: it may simply have been
    /// a stale keep-alive).
    pub reused: bool,
    /// What the server did with the current attempt, once it started service.
    pub served: Option<Served>,
    /// A journey's step: the journey's handle (see `sim/journey.rs`).
    pub journey: Option<u32>,
}

/// One attempt's path through the server, on the scenario clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Served {
    /// Its own service time: what it would take with no queue and no gate.
    pub own: u64,
    /// When it reached the gate.
    pub reach: u64,
    /// When it left.
    pub departure: u64,
    /// Whether an every-nth or slow-fraction fault picked it.
    pub slow: bool,
}

impl Req {
    pub(crate) fn new(lane: u32, intended: u64) -> Req {
        Req {
            lane,
            intended,
            sent: None,
            waited: false,
            attempt: 0,
            attempt_sent: intended,
            reused: false,
            served: None,
            journey: None,
        }
    }
}

#[derive(Debug, Default)]
struct Slot {
    generation: u32,
    req: Option<Req>,
}

#[derive(Debug, Default)]
pub(crate) struct Table {
    slots: Vec<Slot>,
    free: Vec<u32>,
    live: usize,
}

fn split(key: Key) -> (usize, u32) {
    ((key & 0xFFFF_FFFF) as usize, (key >> 32) as u32)
}

impl Table {
    pub(crate) fn insert(&mut self, req: Req) -> Key {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.req = Some(req);
        self.live += 1;
        (u64::from(slot.generation) << 32) | u64::from(index)
    }

    pub(crate) fn get(&self, key: Key) -> Option<&Req> {
        let (i, generation) = split(key);
        let slot = self.slots.get(i)?;
        (slot.generation == generation)
            .then_some(slot.req.as_ref())
            .flatten()
    }

    pub(crate) fn get_mut(&mut self, key: Key) -> Option<&mut Req> {
        let (i, generation) = split(key);
        let slot = self.slots.get_mut(i)?;
        if slot.generation != generation {
            return None;
        }
        slot.req.as_mut()
    }

    pub(crate) fn remove(&mut self, key: Key) -> Option<Req> {
        let (i, generation) = split(key);
        let slot = self.slots.get_mut(i)?;
        if slot.generation != generation {
            return None;
        }
        let req = slot.req.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(i as u32);
        self.live -= 1;
        Some(req)
    }

    /// Every request still in the table, in slot order (deterministic).
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Req> + '_ {
        self.live = 0;
        self.free.clear();
        self.slots.drain(..).filter_map(|s| s.req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_slot_does_not_answer_to_the_old_key() {
        let mut t = Table::default();
        let a = t.insert(Req::new(0, 1));
        assert_eq!(t.remove(a).unwrap().intended, 1);
        let b = t.insert(Req::new(0, 2));
        assert_eq!(a & 0xFFFF_FFFF, b & 0xFFFF_FFFF, "the slot is reused");
        assert!(t.get(a).is_none(), "a late event about a finds nothing");
        assert!(t.remove(a).is_none());
        assert_eq!(t.get(b).unwrap().intended, 2);
        assert_eq!(t.drain().count(), 1);
    }
}
