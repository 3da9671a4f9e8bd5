use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;
use shim_cu::Engine;
use shim_cu::EngineConfig;
use shim_cu::OpenOptions;
use shim_cu::backend::Image;
use shim_cu::engine::Ctx;
use shim_cu::engine::Outcome;
use shim_cu::engine::Reply;
use shim_cu::engine::Request;
use shim_cu::features::Features;
use shim_cu::policy::ManualClock;
use shim_cu::policy::SessionState;
pub(crate) use shim_cu::testing::*;

pub(crate) const T: Duration = Duration::from_secs(20);

pub(crate) struct Rig {
    pub(crate) x: Xvfb,
    pub(crate) engine: Engine,
    pub(crate) clock: Arc<ManualClock>,
    pub(crate) session: SessionState,
    pub(crate) features: Features,
    pub(crate) max_file_size: u64,
}

pub(crate) fn cfg() -> EngineConfig {
    EngineConfig {
        enable_clipboard: true,
        enable_clipboard_read_foreign: false,
        max_screenshots_per_minute: 1000,
        masked_regions: Vec::new(),
    }
}

impl Rig {
    pub(crate) fn new() -> Rig {
        Rig::with(Xvfb::start(1280, 800), cfg())
    }

    pub(crate) fn with(x: Xvfb, cfg: EngineConfig) -> Rig {
        let desktop = shim_cu::open(&OpenOptions {
            display: Some(x.display.clone()),
            ..Default::default()
        })
        .unwrap();
        let clock = Arc::new(ManualClock::default());
        let engine = Engine::new(desktop, cfg, clock.clone());
        let features = engine.features();
        Rig {
            x,
            engine,
            clock,
            session: SessionState::default(),
            features,
            max_file_size: 10_485_760,
        }
    }

    pub(crate) fn refeature(&mut self) {
        self.features = self.engine.features();
    }

    pub(crate) fn go(&self, req: Request) -> Outcome {
        self.go_in(&self.session, req)
    }

    pub(crate) fn go_in(&self, session: &SessionState, req: Request) -> Outcome {
        self.engine.handle(
            Ctx {
                session,
                features: &self.features,
                max_file_size: self.max_file_size,
            },
            req,
        )
    }

    pub(crate) fn ok(&self, req: Request) -> Reply {
        let o = self.go(req);
        o.reply.unwrap_or_else(|e| panic!("{e:?}"))
    }

    pub(crate) fn input(&self, json: Value) -> Outcome {
        self.go(Request::Input(serde_json::from_value(json).unwrap()))
    }

    pub(crate) fn input_ok(&self, json: Value) {
        let o = self.input(json.clone());
        assert!(matches!(o.reply, Ok(Reply::Ack)), "{json}: {:?}", o.reply);
    }

    pub(crate) fn shot(&self, json: Value) -> Outcome {
        self.go(Request::Screenshot(serde_json::from_value(json).unwrap()))
    }
}

pub(crate) fn code(o: &Outcome) -> String {
    match &o.reply {
        Err(e) => e.code.as_str().to_owned(),
        Ok(r) => format!("ok: {r:?}"),
    }
}

pub(crate) fn details(o: &Outcome) -> Value {
    match &o.reply {
        Err(e) => Value::Object(e.details.clone().unwrap_or_default()),
        Ok(_) => Value::Null,
    }
}

pub(crate) fn decode_shot(o: &Outcome) -> (Image, shim_protocol::messages::cu::ScreenshotResponse) {
    let Ok(Reply::Screenshot(r)) = &o.reply else {
        panic!("not a screenshot: {:?}", o.reply)
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&r.image_base64)
        .unwrap();
    let img = if r.mime_type == "image/png" {
        let dec = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = dec.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb);
        buf.truncate(info.buffer_size());
        Image {
            width: info.width,
            height: info.height,
            rgb: buf,
        }
    } else {
        let mut d = jpeg_decoder::Decoder::new(&bytes[..]);
        let px = d.decode().unwrap();
        let info = d.info().unwrap();
        Image {
            width: u32::from(info.width),
            height: u32::from(info.height),
            rgb: px,
        }
    };
    assert_eq!((img.width, img.height), (r.width, r.height));
    (img, r.clone())
}

/// Starts an xterm text sink writing to a file; returns the file path (in `dir`).
pub(crate) fn text_sink(x: &Xvfb, dir: &std::path::Path, extra: &[&str]) -> std::path::PathBuf {
    let file = dir.join("sink.txt");
    let cmd = format!("cat > '{}'", file.display());
    let mut args: Vec<&str> = vec!["-T", "sink", "-geometry", "80x24+0+0"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-e", "sh", "-c", &cmd]);
    x.spawn("xterm", &args);
    wait_for(T, || file.exists().then_some(())).expect("text sink did not start");
    // Let xterm finish mapping before typing.
    std::thread::sleep(Duration::from_millis(500));
    file
}
