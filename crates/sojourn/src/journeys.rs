//! A journey file, run: the engine's [`Script`] over a checked [`JourneyFile`].
//!
//! Every choice is the file's pure one (which journey, which data row, which think time, which
//! random number), taken from the journey's index and the run's seed, so shards and the
//! simulator agree on who did what when. A session renders each step from its journey's data
//! row, the variables its earlier steps extracted and its cookie jar, and judges each answer by
//! the step's `expect` and `extract`.
use std::sync::Arc;
use std::time::Duration;

use sojourn_core::journey::{Context, CookieJar, JourneyFile, OnError, Source, Step, Vars};
use sojourn_core::{FailureClass, JourneysConfig, Outcome};
use sojourn_engine::journey::{Script, Session, Step as EngineStep, StepBuf};
use sojourn_engine::result::JourneyNames;
use sojourn_engine::Kept;

/// A journey file and the seed of its choices.
#[derive(Debug, Clone)]
pub struct FileScript {
    file: Arc<JourneyFile>,
    seed: u64,
}

impl FileScript {
    /// Runs `file`, its choices seeded by `seed`.
    pub fn new(file: JourneyFile, seed: u64) -> FileScript {
        FileScript {
            file: Arc::new(file),
            seed,
        }
    }

    /// The checked file.
    pub fn file(&self) -> &JourneyFile {
        &self.file
    }

    /// What the result names: each step and journey with its journey's share, and the file.
    pub fn names(&self, max_journeys: usize) -> JourneyNames {
        let journeys = self.file.journeys();
        let labels = self.file.step_labels();
        let mut steps = Vec::with_capacity(labels.len());
        for (k, journey) in journeys.iter().enumerate() {
            let share = self.file.share(k);
            let first = journey.first_label();
            steps.extend((first..first + journey.steps.len()).map(|l| (labels[l].clone(), share)));
        }
        JourneyNames {
            config: JourneysConfig {
                file: self.file.path().display().to_string(),
                count: journeys.len() as u32,
                steps: labels.len() as u32,
                max_journeys: max_journeys as u32,
                seed: self.seed,
            },
            steps,
            journeys: journeys
                .iter()
                .enumerate()
                .map(|(k, j)| (j.name.clone(), self.file.share(k)))
                .collect(),
        }
    }
}

impl Script for FileScript {
    fn labels(&self) -> (usize, usize) {
        let steps = self.file.journeys().iter().map(|j| j.steps.len()).sum();
        (steps, self.file.journeys().len())
    }

    fn journey_of(&self, index: u64) -> usize {
        self.file.journey_of(index, self.seed)
    }

    fn first_step(&self, journey: usize) -> usize {
        self.file.journeys()[journey].first_label()
    }

    fn begin(&self, index: u64) -> Box<dyn Session> {
        let journey = self.journey_of(index);
        Box::new(FileSession {
            file: self.file.clone(),
            seed: self.seed,
            index,
            journey,
            row: self.file.row_of(index, self.seed),
            vars: Vars::new(),
            jar: CookieJar::new(),
            step: 0,
            repeat: 0,
            current: None,
            rendered: String::new(),
        })
    }
}

/// The simulator's view of the same file: each journey's steps with the same seeded think
/// times a real run draws, so `sim --journey` models exactly the journeys `run --journey` sends.
impl sojourn_sim::JourneyModel for FileScript {
    fn labels(&self) -> (usize, usize) {
        Script::labels(self)
    }

    fn journey_of(&self, index: u64) -> usize {
        Script::journey_of(self, index)
    }

    fn steps(&self, index: u64, out: &mut Vec<sojourn_sim::ModelStep>) {
        out.clear();
        let journey = &self.file.journeys()[Script::journey_of(self, index)];
        let mut think = Duration::ZERO;
        for (k, step) in journey.steps.iter().enumerate() {
            for repeat in 0..step.repeat {
                out.push(sojourn_sim::ModelStep {
                    label: journey.first_label() + k,
                    think,
                    continue_on_error: step.on_error == OnError::Continue,
                });
                think = step.think.draw(index, k, repeat, self.seed);
            }
        }
    }
}

/// Whether judging a step's answer reads its body: a body check, or an extraction from the
/// body (a header or a cookie needs only the head).
fn reads_body(step: &Step) -> bool {
    step.expect.body.is_some()
        || step
            .extract
            .iter()
            .any(|e| matches!(e.source(), Source::Json(_) | Source::Regex { .. }))
}

/// One running journey of a file.
struct FileSession {
    file: Arc<JourneyFile>,
    seed: u64,
    index: u64,
    journey: usize,
    row: Option<usize>,
    vars: Vars,
    jar: CookieJar,
    /// The next step to send and its next repeat.
    step: usize,
    repeat: u32,
    /// The step (and repeat) last sent, which the next answer belongs to.
    current: Option<(usize, u32)>,
    rendered: String,
}

impl FileSession {
    fn steps(&self) -> &[Step] {
        &self.file.journeys()[self.journey].steps
    }

    /// The pause after the step last sent: the think before the next.
    fn think_after_current(&self) -> Duration {
        self.current.map_or(Duration::ZERO, |(step, repeat)| {
            self.steps()[step]
                .think
                .draw(self.index, step, repeat, self.seed)
        })
    }

    fn render(&mut self, req: &mut StepBuf) {
        let file = self.file.clone();
        let step = &file.journeys()[self.journey].steps[self.step];
        let ctx = Context {
            row: self.row.and_then(|r| file.rows().map(|rows| rows.row(r))),
            vars: &self.vars,
            journey: self.index,
            seed: self.seed,
        };
        req.method.clear();
        req.method.push_str(&step.method);
        step.url.render(&ctx, &mut req.url);
        req.headers.clear();
        for (name, value) in &step.headers {
            value.render(&ctx, &mut self.rendered);
            req.headers.push((name.clone(), self.rendered.clone()));
        }
        if let Some(cookies) = self.jar.header() {
            req.headers.push(("Cookie".into(), cookies));
        }
        req.body.clear();
        if let Some(body) = &step.body {
            body.render(&ctx, &mut self.rendered);
            req.body.extend_from_slice(self.rendered.as_bytes());
        }
    }

    /// Judges an answer by the step's `expect`, then takes its `extract`s in order.
    fn judge(&mut self, step: usize, status: u16, kept: &Kept) -> Result<(), FailureClass> {
        let headers: Vec<(&str, &[u8])> = kept
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_slice()))
            .collect();
        self.jar.store(&headers);
        let file = self.file.clone();
        let step = &file.journeys()[self.journey].steps[step];
        if step.expect.check(status, &kept.body).is_err() {
            // Without an `expect.status`, a non-2xx answer fails as its HTTP class, as a
            // request of a plain run would.
            return Err(match (&step.expect.status, Outcome::of_status(status)) {
                (None, Outcome::Failed(class)) => class,
                _ => FailureClass::Check,
            });
        }
        for extract in &step.extract {
            let value = extract
                .apply(status, &headers, &kept.body)
                .map_err(|_| FailureClass::Extract)?;
            self.vars.set(extract.var(), &value);
        }
        Ok(())
    }
}

impl Session for FileSession {
    fn next(&mut self, req: &mut StepBuf) -> Option<EngineStep> {
        if self.step >= self.steps().len() {
            return None;
        }
        let think = self.think_after_current();
        self.render(req);
        let label = self.file.journeys()[self.journey].first_label() + self.step;
        let reads_body = reads_body(&self.steps()[self.step]);
        self.current = Some((self.step, self.repeat));
        self.repeat += 1;
        if self.repeat >= self.steps()[self.step].repeat {
            self.step += 1;
            self.repeat = 0;
        }
        Some(EngineStep {
            label,
            think,
            reads_body,
        })
    }

    fn answered(&mut self, answer: Result<(u16, &Kept), FailureClass>) -> (Outcome, bool) {
        let (step, _) = self.current.expect("an answer follows a step");
        let judged = answer.and_then(|(status, kept)| self.judge(step, status, kept));
        match judged {
            Ok(()) => (Outcome::Ok, true),
            Err(class) => {
                let go_on = self.steps()[step].on_error == OnError::Continue;
                (Outcome::Failed(class), go_on)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> JourneyFile {
        JourneyFile::from_str(text, std::path::Path::new("shop.toml")).unwrap()
    }

    const SHOP: &str = r#"
base_url = "http://127.0.0.1:8080"

[[journey]]
name = "shop"
weight = 1

  [[journey.step]]
  name = "login"
  method = "POST"
  url = "/login"
  body = '{"user": "u${journey}"}'
  extract = { token = { json = "/token" } }
  think = "100ms"

  [[journey.step]]
  name = "list"
  url = "/items"
  headers = { Authorization = "Bearer ${token}" }
  expect = { status = [200], body = "items" }
  repeat = 2
  think = "exp(1s)"
"#;

    fn kept(headers: &[(&str, &str)], body: &str) -> Kept {
        Kept {
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
                .collect(),
            body: body.as_bytes().to_vec(),
            ..Kept::default()
        }
    }

    #[test]
    fn a_session_renders_its_steps_carries_what_it_extracts_and_thinks_between() {
        let script = FileScript::new(file(SHOP), 7);
        assert_eq!(script.labels(), (2, 1));
        let mut s = script.begin(3);
        let mut req = StepBuf::default();
        let first = s.next(&mut req).unwrap();
        assert_eq!((first.label, first.think), (0, Duration::ZERO));
        assert!(first.reads_body, "the login extracts from its body");
        assert_eq!(
            (req.method.as_str(), req.url.as_str()),
            ("POST", "http://127.0.0.1:8080/login")
        );
        assert_eq!(req.body, br#"{"user": "u3"}"#);
        let answer = kept(&[("Set-Cookie", "sid=abc; Path=/")], r#"{"token": "t9"}"#);
        assert_eq!(s.answered(Ok((200, &answer))), (Outcome::Ok, true));
        let second = s.next(&mut req).unwrap();
        assert_eq!(
            (second.label, second.think),
            (1, Duration::from_millis(100))
        );
        assert!(second.reads_body, "the list checks its body");
        assert!(req
            .headers
            .contains(&("Authorization".into(), "Bearer t9".into())));
        assert!(req.headers.contains(&("Cookie".into(), "sid=abc".into())));
        assert_eq!(
            s.answered(Ok((200, &kept(&[], "items: []")))),
            (Outcome::Ok, true)
        );
        // The repeat thinks the step's own drawn pause, the same in every process.
        let third = s.next(&mut req).unwrap();
        let drawn = script.file().journeys()[0].steps[1].think.draw(3, 1, 0, 7);
        assert_eq!((third.label, third.think), (1, drawn));
        assert_ne!(drawn, Duration::ZERO);
        assert_eq!(
            s.answered(Ok((200, &kept(&[], "items")))),
            (Outcome::Ok, true)
        );
        assert!(s.next(&mut req).is_none());
    }

    #[test]
    fn answers_fail_by_check_extract_or_their_http_class_and_end_the_journey() {
        let script = FileScript::new(file(SHOP), 7);
        let mut req = StepBuf::default();
        let mut answer_to_login = |status, body: &str| {
            let mut s = script.begin(0);
            s.next(&mut req).unwrap();
            s.answered(Ok((status, &kept(&[], body))))
        };
        let failed = |class| (Outcome::Failed(class), false);
        assert_eq!(answer_to_login(200, "{}"), failed(FailureClass::Extract));
        assert_eq!(
            answer_to_login(200, "not json"),
            failed(FailureClass::Extract)
        );
        // No expect.status on the login: a 503 is the server's failure, not the check's.
        assert_eq!(answer_to_login(503, "{}"), failed(FailureClass::Http5xx));
        let mut s = script.begin(0);
        s.next(&mut req).unwrap();
        s.answered(Ok((200, &kept(&[], r#"{"token": "t"}"#))));
        s.next(&mut req).unwrap();
        assert_eq!(
            s.answered(Ok((200, &kept(&[], "nothing")))),
            failed(FailureClass::Check)
        );
        let mut s = script.begin(0);
        s.next(&mut req).unwrap();
        assert_eq!(
            s.answered(Err(FailureClass::Timeout)),
            failed(FailureClass::Timeout)
        );
    }

    #[test]
    fn on_error_continue_goes_on_after_a_failed_step() {
        let text = SHOP.replace(
            "think = \"100ms\"",
            "think = \"100ms\"\n  on_error = \"continue\"",
        );
        let script = FileScript::new(file(&text), 7);
        let mut s = script.begin(0);
        let mut req = StepBuf::default();
        s.next(&mut req).unwrap();
        assert_eq!(
            s.answered(Ok((200, &kept(&[], "{}")))),
            (Outcome::Failed(FailureClass::Extract), true)
        );
        assert_eq!(s.next(&mut req).unwrap().label, 1);
    }

    #[test]
    fn only_a_step_that_checks_or_extracts_from_its_body_keeps_it() {
        let text = SHOP
            .replace(
                "extract = { token = { json = \"/token\" } }",
                "extract = { token = { header = \"X-Token\" } }",
            )
            .replace(
                "expect = { status = [200], body = \"items\" }",
                "expect = { status = [200] }",
            );
        let script = FileScript::new(file(&text), 7);
        let mut s = script.begin(0);
        let mut req = StepBuf::default();
        assert!(
            !s.next(&mut req).unwrap().reads_body,
            "a header extraction reads the head"
        );
        let answer = kept(&[("X-Token", "t1")], "");
        assert_eq!(s.answered(Ok((200, &answer))), (Outcome::Ok, true));
        assert!(
            !s.next(&mut req).unwrap().reads_body,
            "a status check reads the head"
        );
        assert!(req
            .headers
            .contains(&("Authorization".into(), "Bearer t1".into())));
        assert!(reads_body(&file(SHOP).journeys()[0].steps[0]));
    }

    #[test]
    fn names_give_each_step_its_journeys_share() {
        let names = FileScript::new(file(SHOP), 7).names(64);
        assert_eq!(
            names.steps,
            vec![("shop/login".into(), 1.0), ("shop/list".into(), 1.0)]
        );
        assert_eq!(names.journeys, vec![("shop".into(), 1.0)]);
        assert_eq!(
            (
                names.config.count,
                names.config.steps,
                names.config.max_journeys
            ),
            (1, 2, 64)
        );
    }
}
