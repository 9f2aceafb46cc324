from atip_trust.cli.launch import main

raise SystemExit(main())
