FROM --platform=linux/x86_64 exec.env.x86_64.0a53cb26c68560f276cb87:latest

COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
